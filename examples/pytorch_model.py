"""Feeding tokvec's vectors into a PyTorch model.

tokvec computes the input layer (token + position embeddings); the model
starts at the first transformer block. Needs torch and numpy (Debian:
python3-torch python3-numpy) and a running server:  make run

    /usr/bin/python3 examples/pytorch_model.py [URL]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "clients", "python"))
import tokvec  # noqa: E402

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
client = tokvec.Client(url)
dim = client.info()["dim"]

block = torch.nn.TransformerEncoderLayer(d_model=dim, nhead=4,
                                         batch_first=True)
batch = [[40, 1101, 257, 3797], [15496, 11, 995, 0]]
x = torch.from_numpy(client.embed(batch))      # (2, 4, dim) float32, no copy
mask = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1])
with torch.no_grad():
    y = block(x, src_mask=mask)
print("input", tuple(x.shape), "-> block output", tuple(y.shape))

# The same vectors as PyTorch's own embedding layers would produce:
torch.manual_seed(123)
tok, pos = torch.nn.Embedding(50257, 256), torch.nn.Embedding(1024, 256)
if dim == 256:
    ref = tok(torch.tensor(batch)) + pos(torch.arange(4))
    print("bit-identical to torch:", torch.equal(ref, x))
