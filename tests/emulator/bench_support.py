"""Playing the parts of GitHub Actions in the benchmark end-to-end tests: the GPU runner that runs
the action's steps with the dispatched inputs, the artifact it uploads, and the `workflow_run`
event GitHub sends when the run completes."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

from bot.core.render.comment import MARKER
from tests.emulator import live
from tests.runner.test_action import Runner
from tests.support import github_data
from tests.support.github_emulator import GitHubEmulator

NUMBER = 2


def play_runner(tmp_path: Path, dispatched: dict, repository: Path) -> tuple[str, bytes, Path]:
    """Run the composite action's steps on this machine as the dispatched workflow would: its
    inputs, on a checkout of the repository. The artifact's name, its zip, and the results folder."""
    inputs = {name: value for name, value in dispatched["inputs"].items() if name != "pr"}
    folder = tmp_path / f"runner-{dispatched['run_id']}"
    folder.mkdir()
    # perfbot is installed already, and the engine's interpreter (the one with torch) is this one.
    runner = Runner(
        folder,
        {**inputs, "repository-path": str(repository), "install": "false", "engine-python": sys.executable},
    )
    steps, upload = runner.run()
    assert upload is not None, steps
    return upload["name"], zipped(Path(upload["path"])), Path(upload["path"])


def zipped(folder: Path) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.iterdir()):
            if path.is_file():
                archive.write(path, path.name)
    return out.getvalue()


def finish(
    bot: live.LiveBot,
    emulator: GitHubEmulator,
    run_id: int,
    conclusion: str = "success",
    artifact: tuple[str, bytes] | None = None,
    **deliver,
) -> object:
    """Upload the artifact (if any), complete the run and deliver GitHub's `workflow_run` event."""
    if artifact is not None:
        emulator.upload_artifact(live.REPO, run_id, *artifact)
    run = emulator.complete_run(run_id, conclusion)
    payload = github_data.workflow_run("completed", run, repo=live.REPO, installation_id=1)
    return bot.deliver("workflow_run", payload, **deliver)


def sticky(emulator: GitHubEmulator) -> str:
    [body] = [c["body"] for c in emulator.comments_on(live.REPO, NUMBER) if c["body"].startswith(MARKER)]
    return body


def replies(emulator: GitHubEmulator) -> list[str]:
    return [
        c["body"]
        for c in emulator.comments_on(live.REPO, NUMBER)
        if c["user"]["type"] == "Bot" and not c["body"].startswith(MARKER)
    ]


def results_json(doc: dict) -> bytes:
    return json.dumps(doc).encode()
