"""The package's version, kept in one place: pyproject.toml."""

from pathlib import Path


def version() -> str:
    """The installed package's version (its metadata, written from pyproject.toml),
    or pyproject.toml's own in a source checkout that was never installed."""
    from importlib import metadata

    try:
        return metadata.version("tcpeval")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text())["project"]["version"]
        except (OSError, ValueError, KeyError):
            return "unknown"
