"""tokvec -- a small Python client for the tokvec embedding server.

Standard library only; numpy is optional. With numpy, ``embed`` returns a
``numpy.ndarray`` of shape (B, S, D) decoded from the server's .npy response
(no JSON parsing of floats); without numpy it returns nested lists of floats
from the JSON response. Both carry the same float32 values, bit for bit.

    from tokvec import Client
    c = Client("http://127.0.0.1:8080")
    x = c.embed([[40, 1101, 257]])       # (1, 3, 256) float32
    c.info()["dim"], c.token(3)

Errors from the server raise ``TokvecError`` with ``status``, ``error_type``
(the contract's code, e.g. "token_out_of_range") and ``message``.
"""
import http.client
import io
import json
import urllib.parse

try:  # optional
    import numpy as _np
except ImportError:  # pragma: no cover - exercised without numpy
    _np = None

__all__ = ["Client", "TokvecError"]
__version__ = "0.1.0"

_DTYPES = ("float32", "float16", "bfloat16")


class TokvecError(Exception):
    """An error answer from tokvec (or a transport failure, status 0)."""

    def __init__(self, status, error_type, message):
        super().__init__("%s (%s): %s" % (error_type, status, message))
        self.status = status
        self.error_type = error_type
        self.message = message


class Client:
    """A connection to one tokvec server. Not thread-safe: use one per
    thread (each keeps one persistent HTTP connection)."""

    def __init__(self, url="http://127.0.0.1:8080", api_key=None,
                 timeout=30.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https"):
            raise ValueError("url must be http:// or https://")
        self._https = u.scheme == "https"
        self._host = u.hostname or "127.0.0.1"
        self._port = u.port or (443 if self._https else 80)
        self._base = u.path.rstrip("/")
        self._timeout = timeout
        self._api_key = api_key
        self._conn = None

    # -- transport -------------------------------------------------------
    def _connection(self):
        if self._conn is None:
            cls = (http.client.HTTPSConnection if self._https
                   else http.client.HTTPConnection)
            self._conn = cls(self._host, self._port, timeout=self._timeout)
        return self._conn

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _request(self, method, path, body=None, headers=None):
        h = dict(headers or {})
        if self._api_key:
            h["Authorization"] = "Bearer " + self._api_key
        for attempt in (0, 1):  # one retry on a connection the server closed
            conn = self._connection()
            try:
                conn.request(method, self._base + path, body=body, headers=h)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as e:
                self.close()
                if attempt:
                    raise TokvecError(0, "connection_error", str(e))
            except OSError as e:
                self.close()
                raise TokvecError(0, "connection_error", str(e))
        if resp.status != 200:
            try:
                err = json.loads(data)
                raise TokvecError(resp.status, err.get("error_type", "error"),
                                  err.get("error", ""))
            except ValueError:
                raise TokvecError(resp.status, "http_error",
                                  data[:200].decode("utf-8", "replace"))
        return resp, data

    def _get_json(self, path):
        _, data = self._request("GET", path,
                                headers={"Accept": "application/json"})
        return json.loads(data)

    # -- API -------------------------------------------------------------
    def health(self):
        return self._get_json("/health")

    def info(self):
        """Table and limits: vocab_size, dim, context_length, dtype, ..."""
        return self._get_json("/info")

    def token(self, token_id):
        """One token row (without positions) as a list of floats."""
        return self._get_json("/tokens/%d" % int(token_id))["embedding"]

    def embed(self, ids, start_position=0, positions=True, dtype="float32"):
        """Embeddings of ``ids`` -- a list of ids (one sequence), a list of
        equal-length lists, or a 2-D integer numpy array -- as (B, S, D).

        With numpy: an ndarray of ``dtype`` (float32, float16; bfloat16 is
        returned widened to float32, exactly). Without numpy: nested lists
        of Python floats (dtype must be float32)."""
        if dtype not in _DTYPES:
            raise ValueError("dtype must be one of %s" % (_DTYPES,))
        if _np is None:
            if dtype != "float32":
                raise ValueError("dtype %s needs numpy" % dtype)
            return self._embed_json(ids, start_position, positions)
        return self._embed_numpy(ids, start_position, positions, dtype)

    def _embed_json(self, ids, start_position, positions):
        body = json.dumps({"inputs": ids, "start_position": start_position,
                           "positions": bool(positions)})
        _, data = self._request("POST", "/embed", body.encode(), {
            "Content-Type": "application/json",
            "Accept": "application/json"})
        return json.loads(data)["embeddings"]

    def _embed_numpy(self, ids, start_position, positions, dtype):
        np = _np
        a = np.asarray(ids)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.size == 0:
            raise ValueError("ids must be a non-empty sequence or batch")
        if a.dtype.kind not in "iu":
            raise ValueError("ids must be integers")
        if a.min() < -2**31 or a.max() >= 2**31:
            # Out of int32: let the server say which id is wrong.
            return np.asarray(self._embed_json(a.tolist(), start_position,
                                               positions), dtype=np.float32)
        q = {"start_position": str(int(start_position)),
             "positions": "true" if positions else "false"}
        if dtype != "float32":
            q["dtype"] = dtype
        path = "/embed?" + urllib.parse.urlencode(q)
        body = np.ascontiguousarray(a, dtype="<i4").tobytes()
        resp, data = self._request("POST", path, body, {
            "Content-Type": "application/octet-stream",
            "X-Tokvec-Shape": "%d,%d" % a.shape,
            "Accept": "application/x-npy"})
        out = np.load(io.BytesIO(data), allow_pickle=False)
        if dtype == "bfloat16":  # raw bits as uint16: widen exactly
            out = (out.astype(np.uint32) << 16).view(np.float32)
        return out
