"""What the Python benches share, one concept a module:

- :mod:`harness.fresh_process`: a measure in a fresh process (the bench's own script run with
  ``--worker``, the spec on stdin, the result as a line of JSON on stdout);
- :mod:`harness.timing`: wall times and their medians;
- :mod:`harness.page_cache`: reading files into the page cache, evicting them, checking which;
- :mod:`harness.machine`: where and when a run ran;
- :mod:`harness.build`: which looseleaf a run measured, pinned for the whole run;
- :mod:`harness.systems`: which peers are installed here, and their versions;
- :mod:`harness.formats`: each file format's writer and readers as the benches call them;
- :mod:`harness.data`: TPC-H lineitem and random words;
- :mod:`harness.report`: numbers and tables as the reports print them.

A bench run as ``python3 benches/<name>.py`` has ``benches/`` on its module path (the script's
directory), so ``import harness`` needs nothing more; pytest has it from ``pyproject.toml``.
"""

from pathlib import Path

#: The repository's root, and where the benches keep their data sets and results by default.
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benches" / "data"
RESULTS = ROOT / "benches" / "results"
