"""fixture_cli - the command line the fixture scripts share.

    sys.exit(fixture_main(sys.argv, "make_fixtures", USAGE, cases, make_case,
                          README_HEAD, readme_row))

OUTDIR [CASE ...]: makes every case (or those named) under OUTDIR with
make_case(case, outdir), one thread, and writes OUTDIR/README.md from
readme_head and one readme_row(case) per case (reference.write_readme).  Returns
the exit status.
"""

import os
import sys

import torch

from reference import write_readme


def fixture_main(argv, script, usage, cases, make_case, readme_head, readme_row):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(f"usage: /usr/bin/python3 tools/{script}.py OUTDIR [CASE ...]\n{usage}",
              file=sys.stderr)
        return 2
    outdir = argv[1]
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    names = set(argv[2:])
    unknown = names - {c.name for c in cases}
    if unknown:
        print(f"{script}: unknown cases {sorted(unknown)}", file=sys.stderr)
        return 2
    for c in cases:
        if names and c.name not in names:
            continue
        make_case(c, outdir)
        print(c.name, file=sys.stderr)
    write_readme(os.path.join(outdir, "README.md"), readme_head,
                 [readme_row(c) for c in cases])
    print(f"wrote {len(cases)} cases to {outdir}", file=sys.stderr)
    return 0
