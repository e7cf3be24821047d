"""pass@k over inspect's epochs equals ``gradebox passk`` on the rows of the same eval."""

from __future__ import annotations

import json

from click.testing import CliRunner
from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import read_eval_log
from inspect_ai.solver import generate

from gradebox.cli import cli
from gradebox.integrations.inspect import gradebox_dataset, gradebox_scorer, pass_at

KS = (1, 2, 5)  # inspect refuses a pass_at reducer whose k exceeds the epochs


def test_pass_at_k_with_five_epochs_equals_gradebox_passk(
    taskset, tmp_path, reply, mock_model, log_dir
):
    replies = {
        "is_even": [reply("is_even", n) for n in ("right", "wrong", "right", "two_blocks")]
        + [reply("is_even", "wrong")],
        "mean": [reply("mean", "right")] + [reply("mean", "wrong")] * 4,
    }
    dataset = MemoryDataset([s for s in gradebox_dataset(taskset) if s.id in replies])
    task = Task(
        dataset=dataset,
        solver=generate(),
        scorer=gradebox_scorer(taskset, static=False, jobs=2),
        epochs=Epochs(5, [pass_at(k) for k in KS]),
    )
    [log] = inspect_eval(
        task, model=mock_model(dataset, replies), log_dir=str(log_dir), display="none"
    )
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    rows = [next(iter(s.scores.values())).metadata for s in log.samples or []]
    assert len(rows) == 10
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(cli, ["passk", str(results), "-k", ",".join(map(str, KS)), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert {t: (v["n"], v["c"]) for t, v in report["tasks"].items()} == {
        "is_even": (5, 2),
        "mean": (5, 1),
    }

    metrics = {s.reducer: s.metrics["accuracy"].value for s in log.results.scores}
    per_task = {r.reducer: {s.sample_id: s.value for s in r.samples} for r in log.reductions}
    for k in KS:
        [name] = [n for n in metrics if n and n.endswith(f"_{k}")]
        assert metrics[name] == report["mean"][f"pass@{k}"]["value"], k
        for task_id, value in per_task[name].items():
            assert value == report["tasks"][task_id][f"pass@{k}"], (k, task_id)
