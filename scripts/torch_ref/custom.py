"""torch references for the user-defined ops of the parity table (crates/rlx-parity/src/cases/
custom.rs): the k-nearest-neighbour op, as squared distances and a stable sort (ties to the lower
index, as the op promises)."""
import torch

REFS = {}


def knn(t, k):
    q, p = t["queries"].double(), t["points"].double()
    d = ((q[:, None, :] - p[None, :, :]) ** 2).sum(-1)
    return [torch.sort(d, dim=1, stable=True).indices[:, :k].to(torch.int32)]


for tag, k in [("q5_p9_d3_k4", 4), ("q70_p33_d7_k16", 16), ("q1_p3_d1_k2", 2)]:
    REFS[f"custom_knn_{tag}"] = lambda t, k=k: knn(t, k)
