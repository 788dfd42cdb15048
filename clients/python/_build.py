"""The package's build backend: setuptools', run on a copy of the sources in a temporary
directory, so that building or installing the package (pip install clients/python)
leaves nothing in the source tree — no build/, no privbo.egg-info — that a later build
or the repository's generated-code check would find (README.md, "Install")."""

import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import get_requires_for_build_sdist, get_requires_for_build_wheel  # noqa: F401

_OUT_OF_TREE = ("build", "dist", "*.egg-info", "__pycache__")


def _in_a_copy(hook):
    def run(directory, *args, **kwargs):
        src, out = os.getcwd(), os.path.abspath(directory)
        with tempfile.TemporaryDirectory(prefix="privbo-build-") as tmp:
            copy = os.path.join(tmp, "src")
            shutil.copytree(src, copy, ignore=shutil.ignore_patterns(*_OUT_OF_TREE))
            os.chdir(copy)
            try:
                return hook(out, *args, **kwargs)
            finally:
                os.chdir(src)

    run.__doc__ = hook.__doc__
    return run


build_wheel = _in_a_copy(_setuptools.build_wheel)
build_sdist = _in_a_copy(_setuptools.build_sdist)
prepare_metadata_for_build_wheel = _in_a_copy(_setuptools.prepare_metadata_for_build_wheel)
