"""Shared pytest fixtures for acctd's integration tests."""
import os
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

import fakecg as _fakecg  # noqa: E402  (tests/fakecg.py)


@pytest.fixture
def fakecg(request, tmp_path):
    """A fresh FakeCgroupFS at tmp_path/"cgroup", mode "v2" by default.

    Other layouts or options through indirect parametrisation, with a mode name
    or a dict of FakeCgroupFS keyword arguments:
        @pytest.mark.parametrize("fakecg", ["v2", "hybrid", "legacy"], indirect=True)
        @pytest.mark.parametrize("fakecg", [{"mode": "hybrid", "nr_nodes": 2}], indirect=True)
    """
    param = getattr(request, "param", "v2")
    kwargs = {"mode": param} if isinstance(param, str) else dict(param)
    fs = _fakecg.FakeCgroupFS(tmp_path / "cgroup", **kwargs)
    yield fs
    fs.close()
