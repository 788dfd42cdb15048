"""A tiny study: release a projection, query the rows it ranks highest, print the budget.
Usage: python3 examples/study.py [HOST:PORT [IDENTITY]]  (a development curator on loopback)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import privbo  # noqa: E402

addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070"
identity = sys.argv[2] if len(sys.argv) > 2 else "py-example"
with privbo.connect(addr, identity=identity) as curator:
    info = curator.get_dataset_info()
    print(f"dataset {info.name}: {info.rows} rows, {info.dimension} features, answers {info.output_privacy.mechanism}")
    z = curator.release_projection(dimension=3, epsilon=1.0, delta=1e-6)  # checksum verified
    print(f"projection {z.release_id}: {z.rows} x {z.cols}, sha256 {z.sha256.hex()}")
    # A crude acquisition: the five rows farthest along the first projected axis.
    picks = sorted(range(z.rows), key=lambda i: -z.matrix[i][0])[:5]
    best = max(curator.query(picks).observations, key=lambda o: o.value)
    print(f"best of rows {picks}: row {best.index} ({best.value:.1f})")
    b = curator.get_budget()
    print(f"budget of {b.identity}: epsilon spent {b.epsilon_spent:g} of {b.epsilon_limit:g}, remaining {b.epsilon_remaining:g}")
