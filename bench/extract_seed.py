#!/usr/bin/env python3
"""Extracts one new file of the seed (a new-file hunk: `path`, then `@@ -0,0 +1,N @@`, then N
lines each starting with '+') into a directory, for the drivers that measure the seed's Python
beside ours. Bench time only: the extracted file is never committed.

  extract_seed.py SEED_FILE PATH_IN_SEED OUT_DIR   prints the extracted file's path
"""
import re
import sys
from pathlib import Path


def main():
    seed, wanted, out_dir = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    lines = seed.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        if line.strip() != wanted:
            continue
        for header_at in range(index + 1, min(index + 4, len(lines))):
            header = re.fullmatch(r"@@ -0,0 \+1,(\d+) @@.*", lines[header_at])
            if header is None:
                continue
            body = lines[header_at + 1:header_at + 1 + int(header.group(1))]
            if len(body) != int(header.group(1)) or not all(b.startswith("+") for b in body):
                sys.exit(f"{wanted}: the hunk in {seed} is not a whole new file")
            target = out_dir / Path(wanted).name
            target.write_text("\n".join(b[1:] for b in body) + "\n", encoding="utf-8")
            print(target)
            return
    sys.exit(f"{wanted}: no new-file hunk in {seed}")


if __name__ == "__main__":
    main()
