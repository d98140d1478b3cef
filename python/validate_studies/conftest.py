"""`make validate-studies`: says which profile each study was checked on."""

from stores import CHECKED


def pytest_terminal_summary(terminalreporter):
    if CHECKED:
        terminalreporter.section("validate-studies: results checked")
        for name, what in sorted(CHECKED.items()):
            terminalreporter.write_line(f"{name}: {what}")
