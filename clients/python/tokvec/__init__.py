"""tokvec -- a small Python client for the tokvec embedding server.

Standard library only; numpy is optional. With numpy, ``embed`` returns a
``numpy.ndarray`` of shape (B, S, D) decoded from the server's .npy response
(no JSON parsing of floats); without numpy it returns nested lists of floats
from the JSON response. Both carry the same float32 values, bit for bit.

    from tokvec import Client
    with Client("http://127.0.0.1:8080") as c:
        x = c.embed([[40, 1101, 257]])       # (1, 3, 256) float32
        y = c.embed([[40, 1101], [257]], pad_id=0)  # ragged: right-padded
        c.info()["dim"], c.token(3)

A client holds one kept-alive connection: close it with ``close()`` or a
``with`` block; one dropped without closing closes its socket when it is
garbage collected (no ``ResourceWarning``).

Errors from the server raise ``TokvecError`` with ``status``, ``error_type``
(the contract's code, e.g. "token_out_of_range") and ``message``.
"""
import array
import base64
import http.client
import io
import json
import sys
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

    def embed(self, ids, start_position=0, positions=True, dtype="float32",
              pad_id=None):
        """Embeddings of ``ids`` -- a list of ids (one sequence), a list of
        lists, or a 2-D integer numpy array -- as (B, S, D).

        ``start_position``: position of the first id (continuing a
        sequence); ``positions=False``: token rows alone; ``pad_id``: rows
        of different lengths are right-padded with this id (without it a
        ragged batch is TokvecError 422 ragged_batch).

        With numpy: an ndarray of ``dtype`` (float32, float16; bfloat16 is
        returned widened to float32, exactly). Without numpy: nested lists
        of Python floats (dtype must be float32)."""
        if dtype not in _DTYPES:
            raise ValueError("dtype must be one of %s" % (_DTYPES,))
        if pad_id is not None:
            pad_id = int(pad_id)
        if _np is None:
            if dtype != "float32":
                raise ValueError("dtype %s needs numpy" % dtype)
            return self._embed_json(ids, start_position, positions, pad_id)
        if pad_id is not None or _ragged(ids):
            # A JSON request (the server pads, or says ragged_batch), the
            # reply still as .npy.
            return self._embed_json_npy(ids, start_position, positions,
                                        pad_id, dtype)
        return self._embed_numpy(ids, start_position, positions, dtype)

    @staticmethod
    def _embed_body(ids, start_position, positions, pad_id, **extra):
        if _np is not None and isinstance(ids, _np.ndarray):
            ids = ids.tolist()
        body = {"inputs": ids, "start_position": int(start_position),
                "positions": bool(positions)}
        if pad_id is not None:
            body["pad_id"] = pad_id
        body.update(extra)
        return json.dumps(body).encode()

    def _embed_json(self, ids, start_position, positions, pad_id=None):
        """Nested lists; the floats travel as base64 of the raw float32
        bytes (encoding_format), so none is parsed from decimal text."""
        body = self._embed_body(ids, start_position, positions, pad_id,
                                encoding_format="base64")
        _, data = self._request("POST", "/embed", body, {
            "Content-Type": "application/json",
            "Accept": "application/json"})
        reply = json.loads(data)
        b, s, d = reply["shape"]
        flat = array.array("f")
        flat.frombytes(base64.b64decode(reply["embeddings"]))
        if sys.byteorder == "big":
            flat.byteswap()
        if len(flat) != b * s * d:
            raise TokvecError(200, "bad_response",
                              "shape does not match the data")
        rows = [flat[i:i + d].tolist() for i in range(0, b * s * d, d)]
        return [rows[i:i + s] for i in range(0, b * s, s)]

    def _embed_json_npy(self, ids, start_position, positions, pad_id,
                        dtype):
        body = self._embed_body(ids, start_position, positions, pad_id)
        path = "/embed"
        if dtype != "float32":
            path += "?" + urllib.parse.urlencode({"dtype": dtype})
        _, data = self._request("POST", path, body, {
            "Content-Type": "application/json",
            "Accept": "application/x-npy"})
        return self._load_npy(data, dtype)

    @staticmethod
    def _load_npy(data, dtype):
        np = _np
        out = np.load(io.BytesIO(data), allow_pickle=False)
        if dtype == "bfloat16":  # raw bits as uint16: widen exactly
            out = (out.astype(np.uint32) << 16).view(np.float32)
        return out

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
            return self._embed_json_npy(a.tolist(), start_position,
                                        positions, None, dtype)
        q = {"start_position": str(int(start_position)),
             "positions": "true" if positions else "false"}
        if dtype != "float32":
            q["dtype"] = dtype
        path = "/embed?" + urllib.parse.urlencode(q)
        body = np.ascontiguousarray(a, dtype="<i4").tobytes()
        _, data = self._request("POST", path, body, {
            "Content-Type": "application/octet-stream",
            "X-Tokvec-Shape": "%d,%d" % a.shape,
            "Accept": "application/x-npy"})
        return self._load_npy(data, dtype)


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
