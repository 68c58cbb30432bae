#!/usr/bin/env python3
"""check-manifests.py -- offline validation of deploy/k8s/*.yaml,
deploy/k8s-model/*.yaml and the compose files (make manifest-check).

No cluster and no kubectl: Debian's kubernetes-client (1.20) needs a server
even for --dry-run=client. This checks the fields that matter for tokvec:
the shape of each object, the cross-references between them (selectors,
ConfigMap, volumes, HPA target, probe ports) and the service's own rules
(probes on /ready and /health -- httpGet, or exec of `tokvec probe URL` --, grace period above the drain timeout,
read-only table or model directory, a table or a model but not both, non-root, resources set, every TOKVEC_* key a real setting).
A compose file (a mapping with "services") gets the same rules for each
service that runs tokvec: settings, table or model on a read-only volume,
not both, read-only root, capabilities dropped, health check on /ready.

  check-manifests.py FILE.yaml...        exit 0 = valid, 1 = errors listed
  check-manifests.py --self-test FILE... also checks that broken variants fail

Needs python3-yaml (Debian).
"""
import copy
import os
import re
import sys

try:
    import yaml
except ImportError:
    sys.exit("check-manifests: python3-yaml missing (apt-get install python3-yaml)")

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_H = os.path.join(HERE, "..", "server", "runtime", "config.h")

API = {  # kind -> apiVersion a current cluster serves
    "ConfigMap": "v1", "Service": "v1", "PersistentVolumeClaim": "v1", "Secret": "v1",
    "Deployment": "apps/v1", "HorizontalPodAutoscaler": "autoscaling/v2",
    "PodDisruptionBudget": "policy/v1",
}
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DEFAULT_DRAIN = 30.0
# Used when server/runtime/config.h cannot be read (contract sections 3-5).
FALLBACK_SETTINGS = {
    "table", "position_path", "token_tensor", "position_tensor", "positional", "host",
    "port", "threads", "max_body_bytes", "max_tokens", "max_batch", "max_queue",
    "max_connections", "request_timeout", "max_inflight_bytes", "drain_timeout",
    "api_key", "api_key_file", "cors_origin", "log_format", "log_level", "access_log",
    "config",
}


def settings():
    """TOKVEC_<NAME> env names, from the tv_config struct in server/runtime/config.h."""
    names = set()
    try:
        text = open(CONFIG_H).read()
        body = text[text.index("typedef struct tv_config"):]
        body = body[:body.index("} tv_config;")]
        for m in re.finditer(r"^\s*(?:char\s*\*|int64_t|double|int|bool)\s*(\w+)\s*;", body, re.M):
            names.add(m.group(1))
    except (OSError, ValueError):
        pass
    names = names or set(FALLBACK_SETTINGS)
    if "config_path" in names:  # the file is --config / TOKVEC_CONFIG
        names.discard("config_path")
        names.add("config")
    return {"TOKVEC_" + n.upper() for n in names}


def quantity(q):
    """Kubernetes quantity -> float (bytes or cores)."""
    s = str(q)
    m = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?", s)
    if not m:
        raise ValueError("bad quantity %r" % s)
    mult = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4}[m.group(2)]
    return float(m.group(1)) * mult


def get(d, path, default=None):
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def check(docs):
    """docs: list of (file, dict). Returns a list of error strings."""
    errs = []

    def err(where, msg):
        errs.append("%s: %s" % (where, msg))

    by_kind = {}
    for f, d in docs:
        where = f
        if not isinstance(d, dict):
            err(where, "not a mapping")
            continue
        kind, api, name = d.get("kind"), d.get("apiVersion"), get(d, "metadata.name")
        where = "%s: %s/%s" % (f, kind, name)
        if kind not in API:
            err(where, "unexpected kind %r (known: %s)" % (kind, ", ".join(sorted(API))))
            continue
        if api != API[kind]:
            err(where, "apiVersion %r, expected %r" % (api, API[kind]))
        if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 63:
            err(where, "metadata.name %r is not a DNS label" % (name,))
        if (kind, name) in by_kind:
            err(where, "defined twice")
        by_kind[(kind, name)] = (where, d)

    def objs(kind):
        return [(k[1], v[0], v[1]) for k, v in by_kind.items() if k[0] == kind]

    env_names = settings()
    # --- ConfigMaps
    cms = {}
    for name, where, d in objs("ConfigMap"):
        data = d.get("data") or {}
        if not isinstance(data, dict):
            err(where, "data is not a mapping")
            continue
        for k, v in data.items():
            if not isinstance(v, str):
                err(where, "data.%s must be a string (quote it), got %r" % (k, v))
            if k.startswith("TOKVEC_") and k not in env_names:
                err(where, "%s is not a tokvec setting (known: %s)" % (k, ", ".join(sorted(env_names))))
            if k in ("TOKVEC_API_KEY",):
                err(where, "%s belongs in a Secret, not a ConfigMap" % k)
        cms[name] = data

    pvcs = {name: d for name, where, d in objs("PersistentVolumeClaim")}
    for name, where, d in objs("PersistentVolumeClaim"):
        modes = get(d, "spec.accessModes") or []
        if not modes:
            err(where, "spec.accessModes missing")
        try:
            quantity(get(d, "spec.resources.requests.storage"))
        except (ValueError, TypeError):
            err(where, "spec.resources.requests.storage missing or bad")

    # --- Deployments
    deployments = {}
    for name, where, d in objs("Deployment"):
        deployments[name] = d
        sel = get(d, "spec.selector.matchLabels") or {}
        labels = get(d, "spec.template.metadata.labels") or {}
        if not sel:
            err(where, "spec.selector.matchLabels missing")
        for k, v in sel.items():
            if labels.get(k) != v:
                err(where, "selector %s=%s does not match the pod template labels" % (k, v))
        pod = get(d, "spec.template.spec") or {}
        ctrs = pod.get("containers") or []
        if not ctrs:
            err(where, "no containers")
            continue
        env = {}
        # envFrom ConfigMaps and plain env
        vols = {v.get("name"): v for v in pod.get("volumes") or []}
        for vname, v in vols.items():
            claim = get(v, "persistentVolumeClaim.claimName")
            if claim is not None:
                if claim not in pvcs:
                    err(where, "volume %s: PersistentVolumeClaim %s not defined" % (vname, claim))
            cm = get(v, "configMap.name")
            if cm is not None and cm not in cms:
                err(where, "volume %s: ConfigMap %s not defined" % (vname, cm))
        drain = DEFAULT_DRAIN
        for c in ctrs:
            cw = "%s container %s" % (where, c.get("name"))
            if not c.get("image"):
                err(cw, "image missing")
            for ef in c.get("envFrom") or []:
                cm = get(ef, "configMapRef.name")
                if cm is not None:
                    if cm not in cms:
                        err(cw, "envFrom ConfigMap %s not defined" % cm)
                    else:
                        env.update(cms[cm])
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = e["value"]
                if e.get("name", "").startswith("TOKVEC_") and e["name"] not in env_names:
                    err(cw, "env %s is not a tokvec setting" % e["name"])
            if "TOKVEC_DRAIN_TIMEOUT" in env:
                try:
                    drain = float(env["TOKVEC_DRAIN_TIMEOUT"])
                except ValueError:
                    err(cw, "TOKVEC_DRAIN_TIMEOUT %r is not a number" % env["TOKVEC_DRAIN_TIMEOUT"])
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
            if not ports:
                err(cw, "no ports")
            want_port = int(env.get("TOKVEC_PORT", 8080))
            if want_port not in ports.values():
                err(cw, "tokvec listens on %d (TOKVEC_PORT) but containerPort is %s"
                    % (want_port, sorted(ports.values())))
            if env.get("TOKVEC_HOST", "0.0.0.0") not in ("0.0.0.0", "::"):
                err(cw, "TOKVEC_HOST=%s: probes and the Service cannot reach it" % env["TOKVEC_HOST"])
            for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/health")):
                p = c.get(probe)
                if not p:
                    err(cw, "%s missing" % probe)
                    continue
                cmd = get(p, "exec.command")
                if cmd is not None:  # the image's check: tokvec probe URL
                    url = "http://127.0.0.1:%d%s" % (want_port, path)
                    if (len(cmd) != 3 or not cmd[0].endswith("/tokvec") or cmd[1] != "probe"
                            or cmd[2] != url):
                        err(cw, "%s exec must be [.../tokvec, probe, %s], not %r" % (probe, url, cmd))
                    continue
                if get(p, "httpGet.path") != path:
                    err(cw, "%s must GET %s, not %s" % (probe, path, get(p, "httpGet.path")))
                port = get(p, "httpGet.port")
                if not (port in ports or port in ports.values()):
                    err(cw, "%s port %r is not a container port" % (probe, port))
            res = c.get("resources") or {}
            for what in ("cpu", "memory"):
                r, l = get(res, "requests." + what), get(res, "limits." + what)
                if r is None:
                    err(cw, "resources.requests.%s missing" % what)
                    continue
                try:
                    if l is not None and quantity(l) < quantity(r):
                        err(cw, "limits.%s %s below requests.%s %s" % (what, l, what, r))
                except ValueError as e:
                    err(cw, "resources: %s" % e)
            mem_lim = get(res, "limits.memory")
            if mem_lim and "TOKVEC_MAX_INFLIGHT_BYTES" in env:
                try:
                    if int(env["TOKVEC_MAX_INFLIGHT_BYTES"]) >= quantity(mem_lim):
                        err(cw, "TOKVEC_MAX_INFLIGHT_BYTES %s not below limits.memory %s"
                            % (env["TOKVEC_MAX_INFLIGHT_BYTES"], mem_lim))
                except ValueError:
                    err(cw, "TOKVEC_MAX_INFLIGHT_BYTES %r is not an integer" % env["TOKVEC_MAX_INFLIGHT_BYTES"])
            sc = c.get("securityContext") or {}
            if sc.get("readOnlyRootFilesystem") is not True:
                err(cw, "securityContext.readOnlyRootFilesystem should be true (tokvec writes nothing)")
            if sc.get("allowPrivilegeEscalation") is not False:
                err(cw, "securityContext.allowPrivilegeEscalation should be false")
            if pod.get("securityContext", {}).get("runAsNonRoot") is not True and sc.get("runAsNonRoot") is not True:
                err(cw, "runAsNonRoot should be true")
            mounts = c.get("volumeMounts") or []
            for m in mounts:
                if m.get("name") not in vols:
                    err(cw, "volumeMount %s: no such volume" % m.get("name"))
            table = env.get("TOKVEC_TABLE")
            if table and not table.startswith("/data/"):  # /data: the table in the image
                holder = [m for m in mounts if table.startswith(m.get("mountPath", "//").rstrip("/") + "/")]
                if not holder:
                    err(cw, "TOKVEC_TABLE %s is on no volumeMount" % table)
                for m in holder:
                    if m.get("readOnly") is not True:
                        err(cw, "the table mount %s must be readOnly" % m.get("mountPath"))
            model = env.get("TOKVEC_MODEL")
            for e in model_errors(env):
                err(cw, e)
            if model:
                holder = [m for m in mounts if under(model, m.get("mountPath", "//"))]
                if not holder:
                    err(cw, "TOKVEC_MODEL %s is on no volumeMount" % model)
                for m in holder:
                    if m.get("readOnly") is not True:
                        err(cw, "the model mount %s must be readOnly" % m.get("mountPath"))
            if table is None and not model:
                err(cw, "neither TOKVEC_TABLE nor TOKVEC_MODEL set (the image serves "
                    "its default table, /data/gpt2-256.safetensors, when neither is)")
        grace = pod.get("terminationGracePeriodSeconds", 30)
        pre = 0.0
        for c in ctrs:
            cmd = get(c, "lifecycle.preStop.exec.command") or []
            if len(cmd) == 2 and cmd[0] == "sleep":
                pre += float(cmd[1])
        if not isinstance(grace, int) or grace <= drain + pre:
            err(where, "terminationGracePeriodSeconds %s must exceed preStop %gs + drain timeout %gs"
                % (grace, pre, drain))

    # --- Services
    for name, where, d in objs("Service"):
        sel = get(d, "spec.selector") or {}
        if not sel:
            err(where, "spec.selector missing")
        match = [dn for dn, dd in deployments.items()
                 if all((get(dd, "spec.template.metadata.labels") or {}).get(k) == v for k, v in sel.items())]
        if not match:
            err(where, "selector %s matches no Deployment's pods" % sel)
        for p in get(d, "spec.ports") or []:
            tp = p.get("targetPort", p.get("port"))
            ok = False
            for dn in match:
                for c in get(deployments[dn], "spec.template.spec.containers") or []:
                    for cp in c.get("ports") or []:
                        if tp in (cp.get("name"), cp.get("containerPort")):
                            ok = True
            if match and not ok:
                err(where, "targetPort %r is no container port of %s" % (tp, ", ".join(match)))

    # --- HPAs
    for name, where, d in objs("HorizontalPodAutoscaler"):
        ref = get(d, "spec.scaleTargetRef") or {}
        if ref.get("kind") != "Deployment" or ref.get("name") not in deployments:
            err(where, "scaleTargetRef %s/%s is not a Deployment defined here" % (ref.get("kind"), ref.get("name")))
        elif ref.get("apiVersion") != "apps/v1":
            err(where, "scaleTargetRef.apiVersion %r, expected apps/v1" % ref.get("apiVersion"))
        lo, hi = get(d, "spec.minReplicas", 1), get(d, "spec.maxReplicas")
        if not isinstance(hi, int) or not isinstance(lo, int) or not 1 <= lo <= hi:
            err(where, "need 1 <= minReplicas (%s) <= maxReplicas (%s)" % (lo, hi))
        metrics = get(d, "spec.metrics") or []
        if not metrics:
            err(where, "spec.metrics missing")
        for m in metrics:
            if m.get("type") == "Resource":
                rname = get(m, "resource.name")
                tgt = get(m, "resource.target") or {}
                if tgt.get("type") == "Utilization":
                    u = tgt.get("averageUtilization")
                    if not isinstance(u, int) or not 1 <= u <= 100:
                        err(where, "averageUtilization %r" % u)
                    dep = deployments.get(ref.get("name"))
                    for c in get(dep, "spec.template.spec.containers") or [] if dep else []:
                        if get(c, "resources.requests." + str(rname)) is None:
                            err(where, "Utilization of %s needs resources.requests.%s on container %s"
                                % (rname, rname, c.get("name")))

    # --- PodDisruptionBudgets
    for name, where, d in objs("PodDisruptionBudget"):
        sel = get(d, "spec.selector.matchLabels") or {}
        if not any(all((get(dd, "spec.template.metadata.labels") or {}).get(k) == v for k, v in sel.items())
                   for dd in deployments.values()):
            err(where, "selector %s matches no Deployment's pods" % sel)

    if not deployments:
        errs.append("no Deployment found")
    for kind in ("Service", "HorizontalPodAutoscaler", "ConfigMap"):
        if not objs(kind):
            errs.append("no %s found" % kind)
    return errs


def under(path, mount):
    """path is the mount point or inside it."""
    mount = str(mount).rstrip("/") or "/"
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def model_errors(env):
    """A model directory brings its own table and tokenizer: either beside
    it stops start-up (exit 2). The directory must be an absolute path."""
    model = env.get("TOKVEC_MODEL")
    if not model:
        return []
    errs = []
    for other in ("TOKVEC_TABLE", "TOKVEC_TOKENIZER"):
        if env.get(other):
            errs.append("TOKVEC_MODEL and %s are both set: tokvec serve refuses to start "
                        "(a model directory brings its own table and tokenizer)" % other)
    if not model.startswith("/"):
        errs.append("TOKVEC_MODEL %s is not an absolute path" % model)
    return errs


def compose_env(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
    return {k: (None if v is None else str(v)) for k, v in env.items()}


def compose_mounts(svc):
    """[(container path, read-only)] of a service's volumes, short
    ("src:dst[:ro]") or long syntax."""
    out = []
    for v in svc.get("volumes") or []:
        if isinstance(v, str):
            parts = v.split(":")
            dst = parts[1] if len(parts) > 1 else parts[0]
            out.append((dst, len(parts) > 2 and "ro" in parts[2].split(",")))
        elif isinstance(v, dict):
            out.append((v.get("target", ""), v.get("read_only") is True))
    return out


def runs_tokvec(svc):
    image = str(svc.get("image", ""))
    repo = image.rsplit("/", 1)[-1].split(":")[0]
    return repo == "tokvec" or any(k.startswith("TOKVEC_") for k in compose_env(svc))


def check_compose(docs):
    """docs: list of (file, compose mapping). Returns error strings."""
    errs = []
    env_names = settings()
    for f, d in docs:
        services = d.get("services")
        if not isinstance(services, dict) or not services:
            errs.append("%s: no services" % f)
            continue
        found = False
        for name, svc in services.items():
            if not isinstance(svc, dict) or not runs_tokvec(svc):
                continue
            found = True
            where = "%s: service %s" % (f, name)
            env = compose_env(svc)
            for k in env:
                if k.startswith("TOKVEC_") and k not in env_names:
                    errs.append("%s: %s is not a tokvec setting" % (where, k))
            if "TOKVEC_API_KEY" in env:
                errs.append("%s: TOKVEC_API_KEY in plain text: use TOKVEC_API_KEY_FILE "
                            "and a secret" % where)
            errs.extend("%s: %s" % (where, e) for e in model_errors(env))
            mounts = compose_mounts(svc)
            for key, what in (("TOKVEC_MODEL", "model"), ("TOKVEC_TABLE", "table")):
                path = env.get(key)
                if not path or path.startswith("/data/"):  # /data: the image's own
                    continue
                holder = [ro for dst, ro in mounts if under(path, dst)]
                if not holder:
                    errs.append("%s: %s %s is on no volume" % (where, key, path))
                elif not all(holder):
                    errs.append("%s: the %s volume of %s must be mounted :ro" % (where, what, path))
            if svc.get("read_only") is not True:
                errs.append("%s: read_only should be true (tokvec writes nothing)" % where)
            if "ALL" not in (svc.get("cap_drop") or []):
                errs.append("%s: cap_drop should hold ALL" % where)
            port = int(env.get("TOKVEC_PORT") or 8080)
            test = get(svc, "healthcheck.test")
            test = " ".join(test) if isinstance(test, list) else str(test or "")
            if "tokvec probe http://127.0.0.1:%d/ready" % port not in test:
                errs.append("%s: healthcheck must run `tokvec probe http://127.0.0.1:%d/ready`, "
                            "not %r" % (where, port, test))
        if not found:
            errs.append("%s: no service runs tokvec" % f)
    return errs


def is_compose(d):
    return isinstance(d, dict) and "services" in d and "kind" not in d


COMPOSE_VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")


def interpolate(x):
    """A compose file's ${VAR:-default} / ${VAR-default} / ${VAR} / $VAR
    with every variable unset: the file as its defaults make it (the check
    does not depend on this machine's environment)."""
    if isinstance(x, str):
        return COMPOSE_VAR.sub(lambda m: m.group(2) or "", x.replace("$$", "\0")).replace("\0", "$")
    if isinstance(x, list):
        return [interpolate(v) for v in x]
    if isinstance(x, dict):
        return {k: interpolate(v) for k, v in x.items()}
    return x


def load(files):
    docs = []
    for f in files:
        with open(f) as fh:
            for d in yaml.safe_load_all(fh):
                if d is not None:
                    docs.append((os.path.relpath(f), d))
    return docs


def self_test(docs):
    """Each mutation must make check() report an error."""
    def dep(ds):
        return next(d for _, d in ds if d.get("kind") == "Deployment")

    def ctr(ds):
        return dep(ds)["spec"]["template"]["spec"]["containers"][0]

    def cm(ds):
        return next(d for _, d in ds if d.get("kind") == "ConfigMap")

    mutations = {
        "grace period at the drain timeout": lambda ds: dep(ds)["spec"]["template"]["spec"].update(
            terminationGracePeriodSeconds=30),
        "readiness on /health": lambda ds: ctr(ds)["readinessProbe"]["httpGet"].update(path="/health"),
        "liveness probe on /ready": lambda ds: ctr(ds)["livenessProbe"]["exec"]["command"].__setitem__(
            2, "http://127.0.0.1:8080/ready"),
        "liveness probe on another port": lambda ds: ctr(ds)["livenessProbe"]["exec"]["command"].__setitem__(
            2, "http://127.0.0.1:9090/health"),
        "unknown setting": lambda ds: cm(ds)["data"].update(TOKVEC_NO_SUCH_SETTING="1"),
        "number not a string": lambda ds: cm(ds)["data"].update(TOKVEC_PORT=8080),
        "table mount writable": lambda ds: ctr(ds)["volumeMounts"][0].update(readOnly=False),
        "service selector typo": lambda ds: next(d for _, d in ds if d.get("kind") == "Service")[
            "spec"]["selector"].update({"app.kubernetes.io/name": "tokvek"}),
        "HPA target typo": lambda ds: next(d for _, d in ds if d.get("kind") == "HorizontalPodAutoscaler")[
            "spec"]["scaleTargetRef"].update(name="tokvek"),
        "no memory request": lambda ds: ctr(ds)["resources"]["requests"].pop("memory"),
        "port mismatch": lambda ds: cm(ds)["data"].update(TOKVEC_PORT="9090"),
        "api key in ConfigMap": lambda ds: cm(ds)["data"].update(TOKVEC_API_KEY="secret"),
    }
    if any(d.get("kind") == "ConfigMap" and "TOKVEC_MODEL" in (d.get("data") or {}) for _, d in docs):
        mutations["a table beside the model"] = lambda ds: cm(ds)["data"].update(
            TOKVEC_TABLE="/models/t.safetensors")
        mutations["a tokenizer beside the model"] = lambda ds: cm(ds)["data"].update(
            TOKVEC_TOKENIZER="/models/potion-base-8M/tokenizer.json")
        mutations["model outside the volume"] = lambda ds: cm(ds)["data"].update(
            TOKVEC_MODEL="/srv/potion-base-8M")
        mutations["no table and no model"] = lambda ds: cm(ds)["data"].pop("TOKVEC_MODEL")
    else:
        mutations["a model beside the table"] = lambda ds: cm(ds)["data"].update(
            TOKVEC_MODEL="/table/potion-base-8M")
    return run_mutations(docs, mutations, check)


def compose_self_test(docs):
    """Each mutation of the compose files must make check_compose() fail."""
    def svc(ds):
        for _, d in ds:
            for s in d["services"].values():
                if runs_tokvec(s):
                    return s
        raise KeyError("no tokvec service")

    def env(ds):
        s = svc(ds)
        s["environment"] = compose_env(s)
        return s["environment"]

    def writable(ds):
        s = svc(ds)
        s["volumes"] = [v.rsplit(":ro", 1)[0] if isinstance(v, str) else dict(v, read_only=False)
                        for v in s["volumes"]]

    mutations = {
        "unknown setting": lambda ds: env(ds).update(TOKVEC_NO_SUCH_SETTING="1"),
        "volume writable": writable,
        "root filesystem writable": lambda ds: svc(ds).update(read_only=False),
        "capabilities kept": lambda ds: svc(ds).pop("cap_drop"),
        "health check on /health": lambda ds: svc(ds)["healthcheck"].update(
            test="/usr/local/bin/tokvec probe http://127.0.0.1:8080/health"),
        "model and table both set": lambda ds: env(ds).update(
            TOKVEC_MODEL="/models/m", TOKVEC_TABLE="/models/t.safetensors"),
        "api key in plain text": lambda ds: env(ds).update(TOKVEC_API_KEY="secret"),
    }
    return run_mutations(docs, mutations, check_compose)


def run_mutations(docs, mutations, checker):
    bad = 0
    for what, mutate in mutations.items():
        ds = copy.deepcopy(docs)
        try:
            mutate(ds)
        except (StopIteration, KeyError, IndexError) as e:
            print("self-test: cannot apply %r (%r)" % (what, e))
            bad += 1
            continue
        errs = checker(ds)
        if errs:
            print("self-test: %-36s caught: %s" % (what, errs[0]))
        else:
            print("self-test: %-36s NOT CAUGHT" % what)
            bad += 1
    return bad


def main(argv):
    st = "--self-test" in argv
    files = [a for a in argv if a != "--self-test"]
    if not files:
        sys.exit(__doc__)
    everything = load(files)
    compose = [(f, interpolate(d)) for f, d in everything if is_compose(d)]
    docs = [(f, d) for f, d in everything if not is_compose(d)]
    errs = (check(docs) if docs else []) + check_compose(compose)
    for e in errs:
        print("deploy-check: " + e)
    if errs:
        print("deploy-check: FAIL, %d error(s) in %d object(s)" % (len(errs), len(everything)))
        return 1
    kinds = ", ".join(["%s/%s" % (d["kind"], d["metadata"]["name"]) for _, d in docs]
                      + ["compose %s (%s)" % (f, ", ".join(d["services"])) for f, d in compose])
    print("deploy-check: OK, %d objects: %s" % (len(everything), kinds))
    if st:
        bad = (self_test(docs) if docs else 0) + sum(compose_self_test([c]) for c in compose)
        if bad:
            print("deploy-check: FAIL, %d broken variant(s) not caught" % bad)
            return 1
        print("deploy-check: self-test OK, every broken variant caught")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
