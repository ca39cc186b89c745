"""`python -m minitf translate …` and `python -m minitf train …`: the translator app's command
line, which lives in `minitf.translator.cli`."""

import sys

from minitf.translator.cli import main

if __name__ == "__main__":
    sys.exit(main())
