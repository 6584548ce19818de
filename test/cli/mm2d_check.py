"""C = A B of plb-mm --layout 2d --output FILE (column-major doubles),
against A and B drawn as plb_mm2d_element draws them: exit 0 when every
element is within 1e-9 of the reference (pure Python: for small n).

    mm2d_check.py FILE N SEED
"""
import struct
import sys

M = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def element(seed, which, i, j):
    h = mix(mix(mix(seed ^ (which << 56)) ^ i) ^ j)
    return (h >> 11) * 2.0 ** -52 - 1.0


def main():
    path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    a = [[element(seed, 0, i, j) for j in range(n)] for i in range(n)]
    b = [[element(seed, 1, i, j) for j in range(n)] for i in range(n)]
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != 8 * n * n:
        print(f"{path}: {len(data)} bytes, not {8 * n * n}")
        return 1
    c = struct.unpack(f"<{n * n}d", data)
    bt = list(zip(*b))
    worst = 0.0
    for i in range(n):
        for j in range(n):
            ref = sum(x * y for x, y in zip(a[i], bt[j]))
            worst = max(worst, abs(c[j * n + i] - ref))     # column-major
    print(f"largest difference {worst:.3g}")
    return 0 if worst <= 1e-9 else 1


sys.exit(main())
