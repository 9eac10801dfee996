"""A stratified sample of corpus row ids: from every (corpus, level) stratum, a share of its rows
proportional to its size (at least `--min-per-stratum`), chosen by a seeded hash of the id, so
the same corpora and seed give the same sample on any machine. The ids go one a line to stdout
(`kcv audit --ids-from FILE`), with a comment line per stratum saying how many it holds.

  python3 bench/audit/stratified_ids.py ../shared/corpora/*.jsonl --total 150 > sample-ids.txt
"""

import argparse
import collections
import hashlib
import json
import math


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpora", nargs="+")
    p.add_argument("--total", type=int, default=150)
    p.add_argument("--min-per-stratum", type=int, default=4)
    p.add_argument("--seed", default="kcv-sample-1")
    args = p.parse_args()
    strata = collections.defaultdict(list)
    for path in args.corpora:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                strata[(row.get("corpus", ""), row.get("level", 0))].append(row["id"])
    rows = sum(len(v) for v in strata.values())
    key = lambda i: hashlib.sha256(f"{args.seed}:{i}".encode()).hexdigest()  # noqa: E731
    for (corpus, level), ids in sorted(strata.items()):
        n = min(len(ids), max(args.min_per_stratum, math.ceil(args.total * len(ids) / rows)))
        print(f"# {corpus} L{level}: {n} of {len(ids)}")
        for i in sorted(ids, key=key)[:n]:
            print(i)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
