"""Argument parsing of the command line: one-line usage errors, and verbs loaded on first use.

Light on purpose (argparse and `bot.errors` only): `perfbot --help` must not pay for the imports of
any verb, and a verb's run only for its own.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NoReturn

from bot.errors import UserError


class UsageError(UserError):
    """A mistake in what the user asked for: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake in one line instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        # main() prints "perfbot: error: ": name the verb (if any) once after it, not the program again.
        verb = self.prog.partition(" ")[2]
        raise UsageError(f"{verb + ': ' if verb else ''}{message} (see '{self.prog} --help')")


class LazyVerbs(argparse._SubParsersAction):
    """Subcommands declared up front by name and one-line help, their modules imported on first use.

    `declare` lists a verb for `--help` and the choices. When the verb is parsed, its module is
    imported and its ``setup(subparsers)`` adds the verb's full parser, which takes the place of
    the declared one; so `perfbot VERB --help` and every error message are the module's own.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._modules: dict[str, str] = {}
        self._loaded: set[str] = set()

    def declare(self, name: str, module: str, help: str) -> None:
        self._modules[name] = module
        super().add_parser(name, help=help)

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name in self._modules:
            kwargs.pop("help", None)  # listed once, by `declare`
            del self._name_parser_map[name]
        return super().add_parser(name, **kwargs)

    def load(self, name: str) -> None:
        """Import the module of verb ``name`` (once) and let it add its parsers."""
        module = self._modules.get(name)
        if module is not None and module not in self._loaded:
            self._loaded.add(module)
            importlib.import_module(module).setup(self)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        self.load(values[0])
        super().__call__(parser, namespace, values, option_string)
