#!/usr/bin/env python3
"""Runs the pytest suite of the Python package (meson test 'python'); exit 77 (skipped) when
pytest (Debian's python3-pytest) is not installed."""
import os
import sys

try:
    import pytest
except ImportError:
    print("pytest is not installed (python3-pytest): skipped")
    sys.exit(77)
here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", here] + sys.argv[1:]))
