"""sentsplit.py -- reads `perf script -F tid,ip,sym,dso` of tokvec serving
/v1/embeddings (call graphs) on stdin; prints {"samples": n, "share":
{step: percent}} as JSON. Each sample goes to the step of the first frame,
leaf upwards, that names one (so malloc under the tokenizer counts as
tokenize); samples with no such frame: "send" when a libmicrohttpd or
socket frame is on the stack, else "other".
"""
import json
import sys

STEPS = {
    "parse": ("json_loadb", "load_object", "tv_request_parse_openai",
              "openai_parse", "embed_parse", "prescan_string"),
    "tokenize": ("tokvec_tokenizer_encode", "tv_text_encode",
                 "tokvec_model_text_cut"),
    "pool": ("tokvec_embed_mean", "pool_rows", "tv_embed_text_resolve"),
    "encode": ("tv_openai_json", "tv_base64", "write_pooled"),
    "send": ("__libc_sendmsg", "__libc_recv", "__libc_send",
             "MHD_resume_connection", "epoll_wait"),
}
BY_NAME = {f: s for s, fs in STEPS.items() for f in fs}


def classify(frames):
    for sym, dso in frames:
        if sym in BY_NAME:
            return BY_NAME[sym]
        if "libjansson" in dso:
            return "parse"
    for sym, dso in frames:
        if "libmicrohttpd" in dso:
            return "send"
    return "other"


def main():
    counts, frames, n = {}, [], 0
    for line in list(sys.stdin) + [""]:
        s = line.strip()
        if not s:
            if frames:
                k = classify(frames)
                counts[k] = counts.get(k, 0) + 1
                n += 1
            frames = []
            continue
        parts = s.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit() and "(" not in s:
            continue  # the sample's header line: tid
        if len(parts) < 2:
            continue
        rest = parts[1]
        sym, _, dso = rest.rpartition(" (")
        frames.append((sym.strip(), dso.rstrip(")")))
    share = {k: 100.0 * v / n for k, v in sorted(counts.items())} if n \
        else {}
    print(json.dumps({"samples": n, "share": share}))


if __name__ == "__main__":
    main()
