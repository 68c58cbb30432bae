"""tokvec -- a small Python client for the tokvec embedding server.

Standard library only; numpy is optional (without it, embeddings come
back as nested lists of floats and ``npy`` answers cannot be read).

    from tokvec import Client
    with Client("http://127.0.0.1:8080") as c:
        x, ids = c.embed("Hello, world")      # (1, S, D) float32, (1, S)
        x = c.embed([[40, 1101, 257]])        # ids in: (1, 3, D)
        x, inp, tgt = c.embed(text, max_length=4, stride=4)  # the book's
        c.tokenize("Hello"), c.decode([15496]), c.similar(3, k=5)
        v = c.embed_sentences(["a text", "another"])  # (2, D) float32

``embed_sentences`` gives one sentence vector per text (a served static
model's: Model2Vec's StaticModel.encode, sentence-transformers'
StaticEmbedding; a plain table's: the mean of its rows) through POST
/v1/embeddings, or POST /embed with "pooling": "mean" when
``normalize`` is given.

``embed`` takes a text, a list of texts (ids may be mixed in), one
sequence of ids, a batch of them or a 2-D integer numpy array. Ids in:
the ``(B, S, D)`` array alone (as in every earlier version). Text in: an
``Embedded(embeddings, input_ids)`` tuple; with ``max_length``: a
``Windows(embeddings, input_ids, target_ids)`` tuple. Every option of
the server's request is a keyword argument (``start_position``,
``positions``, ``pad_id``, ``dtype``, ``encoding_format``, ``truncate``,
``truncation_direction``, ``special_tokens``, ``max_length``,
``stride``, and ``accept``: which answer to ask for); an unknown keyword
is a TypeError naming it, the closest valid one and all of them.

Whatever the answer's format (``.npy``, raw bytes, JSON floats, base64,
torch.save archives), the values are the server's bit for bit.

A client holds one kept-alive connection: close it with ``close()`` or a
``with`` block; one dropped without closing closes its socket when it is
garbage collected (no ``ResourceWarning``). Not thread-safe: one client
per thread.

Errors from the server raise ``TokvecError`` with ``status``,
``error_type`` (the contract's code, e.g. "token_out_of_range") and
``message``; a request that never reached the server has status 0 and
error_type "connection_error".
"""
import array
import base64
import collections
import difflib
import http.client
import io
import json
import struct
import sys
import urllib.parse
import zipfile

try:  # optional
    import numpy as _np
except ImportError:  # pragma: no cover - exercised without numpy
    _np = None

__all__ = ["Client", "TokvecError", "Embedded", "Windows", "TokenWindows"]
__version__ = "0.3.0"

_DTYPES = ("float32", "float16", "bfloat16")
_ENCODINGS = ("float", "base64", "torch")
_ACCEPT = {"npy": "application/x-npy", "raw": "application/octet-stream",
           "json": "application/json"}
_DIRECTIONS = ("right", "left")

# The options of each request: keyword -> key of the JSON body (None: not
# a body key). Adding an option to the server means adding it here (and
# to the method's signature, for help()); the body is built from these.
_EMBED_KEYS = {
    "start_position": "start_position", "positions": "positions",
    "pad_id": "pad_id", "dtype": "dtype",
    "encoding_format": "encoding_format", "truncate": "truncate",
    "truncation_direction": "truncation_direction",
    "special_tokens": "special_tokens", "max_length": "max_length",
    "stride": "stride", "accept": None,
}
_TOKENIZE_KEYS = {
    "special_tokens": "special_tokens", "truncate": "truncate",
    "truncation_direction": "truncation_direction",
    "max_length": "max_length", "stride": "stride",
}
_SIMILAR_KEYS = {"k": "k", "id": "id", "vector": "vector"}
_SENTENCE_KEYS = ("normalize", "dimensions", "model")

Embedded = collections.namedtuple("Embedded", "embeddings input_ids")
Embedded.__doc__ = """embed() of text: the (B, S, D) embeddings and the
(B, S) ids they are of (None when the answer was binary: accept="npy" or
"raw" carry no ids)."""
Windows = collections.namedtuple("Windows",
                                 "embeddings input_ids target_ids")
Windows.__doc__ = """embed(text, max_length=L, stride=T): the book's
windows, (N, L, D) embeddings of input_ids (N, L) and target_ids, the same
shifted by one token (ids None when the answer was binary)."""
TokenWindows = collections.namedtuple("TokenWindows", "input_ids target_ids")
TokenWindows.__doc__ = """tokenize(text, max_length=L, stride=T): the
windows' input ids and target ids (lists of lists)."""


class TokvecError(Exception):
    """An error answer from tokvec (or a transport failure, status 0)."""

    def __init__(self, status, error_type, message):
        super().__init__("%s (%s): %s" % (error_type, status, message))
        self.status = status
        self.error_type = error_type
        self.message = message


def _refuse_unknown(method, unknown, valid):
    """TypeError for the first unknown keyword: its name, the closest
    valid one (camelCase and case are ignored: startPosition ->
    start_position) and the valid ones."""
    name = sorted(unknown)[0]
    valid = sorted(valid)

    def norm(s):
        return s.replace("_", "").lower()

    close = [v for v in valid if norm(v) == norm(name)]
    close = close or difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    hint = " (did you mean %r?)" % close[0] if close else ""
    raise TypeError("%s() got an unknown keyword argument %r%s; valid: %s"
                    % (method, name, hint, ", ".join(valid)))


def _check_choice(name, value, choices):
    if value is not None and value not in choices:
        raise ValueError("%s must be one of %s, not %r"
                         % (name, ", ".join(choices), value))


def _json_default(o):
    """numpy scalars (np.int64 ids in a list) as JSON numbers."""
    if _np is not None:
        if isinstance(o, _np.integer):
            return int(o)
        if isinstance(o, _np.floating):
            return float(o)
        if isinstance(o, _np.ndarray):
            return o.tolist()
    raise TypeError("%r is not JSON serializable" % (o,))


def _dumps(obj):
    return json.dumps(obj, default=_json_default).encode()


def _is_text(inputs):
    """A text, or a list holding at least one text."""
    if isinstance(inputs, str):
        return True
    if isinstance(inputs, (list, tuple)):
        return any(isinstance(x, str) for x in inputs)
    return False


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
        """Closes the connection (a later request opens a new one)."""
        conn = getattr(self, "_conn", None)
        if conn is not None:
            self._conn = None
            conn.close()

    def __del__(self):
        # An unclosed client must not leak its socket (ResourceWarning
        # under -W error): close it when the client is collected.
        try:
            self.close()
        except Exception:
            pass

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
                if isinstance(err.get("error"), dict):  # OpenAI's, /v1/
                    err = {"error_type": err["error"].get("code"),
                           "error": err["error"].get("message")}
                raise TokvecError(resp.status,
                                  err.get("error_type") or "error",
                                  err.get("error") or "")
            except (ValueError, AttributeError):
                raise TokvecError(resp.status, "http_error",
                                  data[:200].decode("utf-8", "replace"))
        return resp, data

    def _get_json(self, path):
        _, data = self._request("GET", path,
                                headers={"Accept": "application/json"})
        return json.loads(data)

    def _post_json(self, path, body):
        _, data = self._request("POST", path, _dumps(body), {
            "Content-Type": "application/json",
            "Accept": "application/json"})
        return json.loads(data)

    # -- API -------------------------------------------------------------
    def health(self):
        return self._get_json("/health")

    def info(self):
        """Table and limits: vocab_size, dim, context_length, dtype,
        tokenizer, ..."""
        return self._get_json("/info")

    def token(self, token_id):
        """One token row (without positions) as a list of floats."""
        return self._get_json("/tokens/%d" % int(token_id))["embedding"]

    def tokenize(self, inputs, *, special_tokens=None, truncate=None,
                 truncation_direction=None, max_length=None, stride=None,
                 **unknown):
        """POST /tokenize. ``inputs``: a text -> its list of tokens
        ``{"id", "text", "special", "start", "stop"}`` (start/stop: byte
        offsets into the UTF-8 text); a list of texts -> one list each.
        With ``max_length`` (and ``stride``, default max_length): the
        windows of one text, ``TokenWindows(input_ids, target_ids)``.
        ``special_tokens=False``: <|endoftext|> is ordinary text;
        ``truncate=True``: cut a text over the server's max_tokens
        (``truncation_direction="left"`` keeps its end)."""
        if unknown:
            _refuse_unknown("tokenize", unknown, _TOKENIZE_KEYS)
        _check_choice("truncation_direction", truncation_direction,
                      _DIRECTIONS)
        opts = dict(special_tokens=special_tokens, truncate=truncate,
                    truncation_direction=truncation_direction,
                    max_length=max_length, stride=stride)
        body = {"inputs": list(inputs) if isinstance(inputs, tuple)
                else inputs}
        body.update({_TOKENIZE_KEYS[k]: v for k, v in opts.items()
                     if v is not None})
        reply = self._post_json("/tokenize", body)
        if max_length is not None:
            return TokenWindows(reply["input_ids"], reply["target_ids"])
        return reply[0] if isinstance(inputs, str) else reply

    def decode(self, ids):
        """POST /decode: one sequence of ids -> its text; a list of
        sequences (or a 2-D array) -> a list of texts. As tiktoken's
        decode with errors="replace" (part of a character is U+FFFD)."""
        if _np is not None and isinstance(ids, _np.ndarray):
            one = ids.ndim == 1
        else:
            ids = list(ids)
            one = not ids or not isinstance(ids[0], (list, tuple)) and not (
                _np is not None and isinstance(ids[0], _np.ndarray))
        reply = self._post_json("/decode", {"ids": ids})
        return reply[0] if one else reply

    def similar(self, query=None, k=None, *, id=None, vector=None,
                **unknown):
        """POST /similar: the ``k`` tokens (default 10, at most 1000)
        nearest by cosine similarity to ``query`` -- a token id (int) or a
        vector of ``dim`` numbers (list or numpy array) -- best first, as
        ``[{"id", "text", "score"}, ...]``. ``id=`` / ``vector=`` name the
        query's kind explicitly."""
        if unknown:
            _refuse_unknown("similar", unknown, _SIMILAR_KEYS)
        if sum(x is not None for x in (query, id, vector)) != 1:
            raise TypeError("similar() takes one query: an id or a vector")
        if query is not None:
            if isinstance(query, int) or (_np is not None and isinstance(
                    query, _np.integer)):
                id = query
            else:
                vector = query
        body = {}
        if id is not None:
            body["id"] = int(id)
        else:
            if _np is not None:
                vector = _np.asarray(vector, dtype=_np.float32).ravel()
            body["vector"] = [float(v) for v in vector]
        if k is not None:
            body["k"] = k
        return self._post_json("/similar", body)

    def embed(self, inputs=None, start_position=0, positions=True,
              dtype="float32", pad_id=None, *, encoding_format=None,
              accept=None, truncate=None, truncation_direction=None,
              special_tokens=None, max_length=None, stride=None, **unknown):
        """POST /embed: the embeddings of ``inputs``.

        ``inputs``: a text, a list of texts (id lists may be mixed in: a
        ragged batch then needs ``pad_id``), one sequence of ids, a batch
        of them, or a 2-D integer numpy array (``ids=`` is accepted as
        its old name).

        Returns, with numpy, an ndarray (B, S, D) of ``dtype`` (float16
        as float16; bfloat16 widened exactly to float32); without numpy,
        nested lists of floats. For ids in, the array alone; for text in,
        ``Embedded(embeddings, input_ids)``; with ``max_length``,
        ``Windows(embeddings, input_ids, target_ids)``.

        Options, as the server's request has them: ``start_position``
        (the position of the first token), ``positions=False`` (token
        rows alone), ``pad_id`` (right-pads rows of different lengths;
        without it a ragged batch is TokvecError 422 ragged_batch),
        ``dtype`` ("float32", "float16", "bfloat16": rounded to nearest
        even by the server), ``truncate`` (cut a text that does not fit
        the positions), ``truncation_direction`` ("right" keeps the
        start, "left" the end), ``special_tokens=False`` (<|endoftext|> as
        plain text), ``max_length`` and ``stride`` (the book's windows
        of one text).

        The answer's format: ``accept`` "npy" (default for ids), "raw" or
        "json" (default for text: the JSON answer carries the ids), and
        for JSON ``encoding_format`` "float", "base64" or "torch" (default:
        base64 for float32, torch for float16/bfloat16). The values are
        the same bits whichever is asked for; binary answers carry no
        ids (``input_ids`` is then None)."""
        if "ids" in unknown and inputs is None:
            inputs = unknown.pop("ids")
        if unknown:
            _refuse_unknown("embed", unknown, ["inputs"] + list(_EMBED_KEYS))
        if inputs is None:
            raise TypeError("embed() needs inputs: a text, texts or ids")
        dtype = dtype or "float32"
        _check_choice("dtype", dtype, _DTYPES)
        _check_choice("encoding_format", encoding_format, _ENCODINGS)
        _check_choice("accept", accept, tuple(_ACCEPT))
        _check_choice("truncation_direction", truncation_direction,
                      _DIRECTIONS)
        text = _is_text(inputs)
        if accept is None:
            accept = "json" if (text or encoding_format or _np is None) \
                else "npy"
        if accept != "json" and encoding_format is not None:
            raise ValueError("encoding_format is for JSON answers; accept=%r "
                             "is binary" % accept)
        if accept == "npy" and _np is None:
            raise ValueError("accept='npy' needs numpy")
        if accept == "json":
            encoding_format = encoding_format or (
                "base64" if dtype == "float32" else "torch")
            if dtype != "float32" and encoding_format != "torch":
                raise ValueError("JSON floats are float32: dtype %r needs "
                                 "encoding_format='torch' or a binary "
                                 "accept" % dtype)
        opts = dict(start_position=start_position, positions=positions,
                    pad_id=pad_id, truncate=truncate,
                    truncation_direction=truncation_direction,
                    special_tokens=special_tokens, max_length=max_length,
                    stride=stride)
        if pad_id is not None:
            opts["pad_id"] = int(pad_id)

        if (accept != "json" and not text and _np is not None
                and all(opts[k] is None for k in opts
                        if k not in ("start_position", "positions"))):
            a = _np.asarray(inputs) if not _ragged(inputs) else None
            if (a is not None and a.ndim in (1, 2) and a.size
                    and a.dtype.kind in "iu"
                    and a.min() >= -2**31 and a.max() < 2**31):
                return self._embed_binary(a, start_position, positions,
                                          dtype, accept)

        if _np is not None and isinstance(inputs, _np.ndarray):
            inputs = inputs.tolist()
        elif isinstance(inputs, tuple):
            inputs = list(inputs)
        body = {"inputs": inputs}
        body.update({_EMBED_KEYS[k]: v for k, v in opts.items()
                     if v is not None})
        if accept == "json":
            body["encoding_format"] = encoding_format
            if dtype != "float32":
                body["dtype"] = dtype
            path = "/embed"
        else:
            path = "/embed" + _dtype_query(dtype)
        resp, data = self._request("POST", path, _dumps(body), {
            "Content-Type": "application/json", "Accept": _ACCEPT[accept]})
        if accept == "json":
            reply = json.loads(data)
            x = _embeddings_json(reply, encoding_format)
            ids = reply.get("input_ids")
            tgt = reply.get("target_ids")
        else:
            x = _embeddings_binary(resp, data, accept, dtype)
            ids = tgt = None
        if max_length is not None:
            return Windows(x, _ids_array(ids), _ids_array(tgt))
        if text:
            return Embedded(x, _ids_array(ids))
        return x

    def embed_sentences(self, texts, *, normalize=None, dimensions=None,
                        model=None, **unknown):
        """One sentence vector per text: an ndarray (N, D) of float32
        (nested lists without numpy). ``texts``: a text (N = 1) or a list
        of texts (id lists are pooled as given).

        The vectors of the served model, exactly as its library computes
        them: Model2Vec's StaticModel.encode, sentence-transformers'
        StaticEmbedding, the mean of the rows for a plain table.

        ``dimensions``: the first k components (renormalized when the
        vectors are normalized); ``normalize``: True / False overrides the
        model's setting (default: the model's); ``model``: the name sent
        as OpenAI's ``model`` (a server serves one model and accepts any
        name). The request is POST /v1/embeddings (base64 float32); with
        ``normalize`` it is POST /embed with "pooling": "mean", which
        gives the same vectors."""
        if unknown:
            _refuse_unknown("embed_sentences", unknown,
                            ("texts",) + _SENTENCE_KEYS)
        if isinstance(texts, tuple):
            texts = list(texts)
        if not isinstance(texts, (str, list)):
            raise TypeError("embed_sentences() takes a text or a list of "
                            "texts, not %s" % type(texts).__name__)
        if normalize is not None and not isinstance(normalize, bool):
            raise TypeError("normalize must be True, False or None")
        if model is not None and not isinstance(model, str):
            raise TypeError("model must be a string")
        if normalize is None:
            body = {"input": texts, "encoding_format": "base64"}
            if model is not None:
                body["model"] = model
            if dimensions is not None:
                body["dimensions"] = dimensions
            reply = self._post_json("/v1/embeddings", body)
            rows = [base64.b64decode(d["embedding"]) for d in
                    sorted(reply["data"], key=lambda d: d["index"])]
            dim = len(rows[0]) // 4 if rows else 0
            return _floats(b"".join(rows), "float32", (len(rows), dim))
        body = {"inputs": texts, "pooling": "mean", "normalize": normalize,
                "encoding_format": "base64"}
        if dimensions is not None:
            body["dimensions"] = dimensions
        reply = self._post_json("/embed", body)
        return _embeddings_json(reply, "base64")

    def _embed_binary(self, a, start_position, positions, dtype, accept):
        """Ids as a binary int32 body (no JSON at all), options in the
        query."""
        if a.ndim == 1:
            a = a[None, :]
        q = {"start_position": str(int(start_position)),
             "positions": "true" if positions else "false"}
        if dtype != "float32":
            q["dtype"] = dtype
        path = "/embed?" + urllib.parse.urlencode(q)
        body = _np.ascontiguousarray(a, dtype="<i4").tobytes()
        resp, data = self._request("POST", path, body, {
            "Content-Type": "application/octet-stream",
            "X-Tokvec-Shape": "%d,%d" % a.shape,
            "Accept": _ACCEPT[accept]})
        return _embeddings_binary(resp, data, accept, dtype)

    # Kept for callers of 0.1 that reached for it: nested lists from the
    # base64 JSON answer.
    def _embed_json(self, ids, start_position, positions, pad_id=None):
        body = {"inputs": ids, "start_position": int(start_position),
                "positions": bool(positions), "encoding_format": "base64"}
        if pad_id is not None:
            body["pad_id"] = int(pad_id)
        reply = self._post_json("/embed", body)
        return _tolist(_embeddings_json(reply, "base64"))


def _dtype_query(dtype):
    return "" if dtype == "float32" else "?" + urllib.parse.urlencode(
        {"dtype": dtype})


def _ids_array(ids):
    if ids is None or _np is None:
        return ids
    return _np.array(ids, dtype=_np.int64)


def _tolist(x):
    return x.tolist() if _np is not None and hasattr(x, "tolist") else x


def _floats(raw, dtype, shape):
    """Little-endian bytes of dtype -> an ndarray of shape (float16 kept,
    bfloat16 widened exactly to float32), or nested lists without numpy."""
    n = 1
    for s in shape:
        n *= s
    size = 4 if dtype == "float32" else 2
    if len(raw) != n * size:
        raise TokvecError(200, "bad_response",
                          "%d bytes do not hold shape %s of %s"
                          % (len(raw), list(shape), dtype))
    if _np is not None:
        if dtype == "float32":
            out = _np.frombuffer(raw, dtype="<f4")
        elif dtype == "float16":
            out = _np.frombuffer(raw, dtype="<f2")
        else:
            out = (_np.frombuffer(raw, dtype="<u2").astype(_np.uint32)
                   << 16).view(_np.float32)
        return out.astype(out.dtype.newbyteorder("="), copy=True
                          ).reshape(shape)
    if dtype == "float32":
        flat = array.array("f")
        flat.frombytes(raw)
        if sys.byteorder == "big":
            flat.byteswap()
        flat = flat.tolist()
    elif dtype == "float16":
        flat = list(struct.unpack("<%de" % n, raw))
    else:
        flat = array.array("f", struct.pack(
            "=%dI" % n, *(h << 16 for h in struct.unpack("<%dH" % n, raw))
        )).tolist()
    return _nest(flat, shape)


def _nest(flat, shape):
    for d in reversed(shape[1:]):
        flat = [flat[i:i + d] for i in range(0, len(flat), d)]
    return flat


def _embeddings_json(reply, encoding_format):
    """The embeddings of a JSON /embed answer, whatever its encoding."""
    shape = reply["shape"]
    dtype = reply["dtype"]
    e = reply["embeddings"]
    if encoding_format == "float":
        if _np is None:
            return e
        return _np.array(e, dtype=_np.float32).reshape(shape)
    if encoding_format == "base64":
        return _floats(base64.b64decode(e), dtype, shape)
    # torch: one torch.save archive per sequence, the tensor's bytes in
    # its data/0 record.
    rows = []
    for s in e:
        with zipfile.ZipFile(io.BytesIO(base64.b64decode(s))) as z:
            name = next(n for n in z.namelist() if n.endswith("/data/0"))
            rows.append(z.read(name))
    return _floats(b"".join(rows), dtype, shape)


def _embeddings_binary(resp, data, accept, dtype):
    if accept == "npy":
        out = _np.load(io.BytesIO(data), allow_pickle=False)
        if (resp.getheader("X-Tokvec-Dtype") or dtype) == "bfloat16":
            out = (out.astype(_np.uint32) << 16).view(_np.float32)
        return out
    shape = [int(v) for v in
             (resp.getheader("X-Tokvec-Shape") or "").split(",") if v]
    return _floats(data, resp.getheader("X-Tokvec-Dtype") or dtype, shape)


def _ragged(ids):
    """True for a list of sequences of different lengths (which numpy
    cannot make an array of)."""
    if _np is not None and isinstance(ids, _np.ndarray):
        return False
    try:
        lens = {len(row) for row in ids}
    except TypeError:  # one sequence of ints
        return False
    return len(lens) > 1
