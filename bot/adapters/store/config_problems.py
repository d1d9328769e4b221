"""What is wrong with each repository's `.github/perfbot.yml` as perfbot last read it from the
default branch (`config_problems`): recorded on each read (a file that reads clean clears it), and
shown by the dashboard so that a maintainer who never opens a pull request still learns that an
invalid key was left out and the runs perfbot starts on its own are held."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.core.text import clip
from bot.service.ports.store import ConfigProblems
from bot.service.records import RepoConfigProblems

from .database import Database, now, table, utc
from .tables import ConfigProblemRow

# A file has far fewer problems than this; the bound keeps a hostile file's row small.
MAX_PROBLEMS = 50
MAX_TEXT = 300


class SqlConfigProblems(ConfigProblems):
    def __init__(self, db: Database):
        self.db = db

    def record(self, repo: str, source: str, problems: Sequence[str]) -> None:
        """What a read of ``repo``'s config found: its problems, or none (the record goes). The
        same problems read again are not written again (a read comes with every event)."""
        kept = tuple(clip(p, MAX_TEXT) for p in problems[:MAX_PROBLEMS])
        source = clip(source, MAX_TEXT)
        if not kept:
            if self._of(repo) is not None:
                with self.db.session() as session:
                    session.execute(delete(ConfigProblemRow).where(ConfigProblemRow.repo == repo))
            return
        known = self._of(repo)
        if known is not None and (known.source, known.problems) == (source, kept):
            return
        insert = (postgresql_insert if self.db.dialect == "postgresql" else sqlite_insert)(
            table(ConfigProblemRow)
        )
        values = dict(repo=repo, source=source, problems=json.dumps(list(kept)), since=now())
        with self.db.session() as session:
            # an upsert: two reads at once leave one row, the last written
            session.execute(
                insert.values(**values).on_conflict_do_update(
                    index_elements=[ConfigProblemRow.repo],
                    set_={key: insert.excluded[key] for key in ("source", "problems", "since")},
                )
            )

    def current(self, repos: Iterable[str] | None = None) -> list[RepoConfigProblems]:
        """The problems of ``repos`` (None: of every repository), by repository name."""
        query = select(ConfigProblemRow).order_by(ConfigProblemRow.repo)
        if repos is not None:
            names = sorted(set(repos))
            if not names:
                return []
            query = query.where(ConfigProblemRow.repo.in_(names))
        with self.db.session() as session:
            return [_stored(row) for row in session.scalars(query)]

    def _of(self, repo: str) -> RepoConfigProblems | None:
        found = self.current([repo])
        return found[0] if found else None


def _stored(row: ConfigProblemRow) -> RepoConfigProblems:
    problems = json.loads(row.problems)
    return RepoConfigProblems(
        repo=row.repo,
        source=row.source,
        problems=tuple(str(p) for p in problems) if isinstance(problems, list) else (),
        since=utc(row.since) or now(),
    )
