"""Short functions in ``archer/``: a function or method over ``MAX_LINES`` lines (its ``def`` line to its last line,
docstring included) says in its docstring why it is one function, with the words "one function"."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "archer"
MAX_LINES = 60
REASON = "one function"


def long_functions(source: str) -> list[tuple[str, int, int, str]]:
    """``(name, first line, lines, docstring)`` of each function in ``source`` longer than ``MAX_LINES`` lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES:
                found.append((node.name, node.lineno, lines, ast.get_docstring(node) or ""))
    return found


def test_the_check_counts_a_function_from_its_def_to_its_last_line() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 2))
    short = f'def short():\n    """Doc."""\n{body}'  # 1 + 1 + 58 = 60 lines
    long = f'def long():\n    """Doc; one function because ..."""\n{body}    return x0\n'  # 61 lines
    assert long_functions(short) == []
    assert [(name, lines) for name, _, lines, _ in long_functions(long)] == [("long", MAX_LINES + 1)]


def test_every_long_function_says_why_it_is_one_function() -> None:
    unexplained = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({lines} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, line, lines, doc in long_functions(path.read_text(encoding="utf-8"))
        if REASON not in doc.lower()
    ]
    assert not unexplained, (
        f"functions over {MAX_LINES} lines: split them, or say in the docstring why each is {REASON!r}: "
        + "; ".join(unexplained)
    )
