"""Importers of judged outputs: AlpacaEval annotations, Arena-Hard judgments, HLE judged JSON, inspect_ai logs with
model-graded scores (tests/data/judge/README.md names every source)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "judge"
REAL = Path("/work/realfiles/judge")


def _jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _annotations(tmp: Path, extra: list[dict] | None = None) -> Path:
    rows = []
    for r in _jsonl("alpaca_eval_alpaca-7b_rows.jsonl"):
        rc = None if r["top_logprobs"] is None else {
            "finish_reason": "length", "logprobs": {"content": [{"token": r["top_logprobs"][0]["token"],
                                                                 "top_logprobs": r["top_logprobs"]}]},
            "message": {"content": r["top_logprobs"][0]["token"], "role": "assistant"}}
        rows.append({"instruction": r["instruction"], "output_1": "out " + r["output_1_sha256"],
                     "output_2": "out " + r["output_2_sha256"], "generator_1": r["generator_1"],
                     "generator_2": r["generator_2"], "annotator": "weighted_alpaca_eval_gpt4_turbo",
                     "preference": r["preference"], "raw_completion": rc})
    path = tmp / "annotations.json"
    path.write_text(json.dumps(rows + (extra or [])))
    return path


def test_alpaca_eval_import_rederives_every_preference(tmp_path: Path, cli) -> None:
    failed = {"instruction": "Name a colour.", "output_1": "Red.", "output_2": "Blue.", "generator_1": "g1",
              "generator_2": "alpaca-7b", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 0,
              "raw_completion": None}
    src = _annotations(tmp_path, [failed])
    r = cli("import", "alpaca-eval", src, "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert r.out == f"wrote {tmp_path / 'calls'}: 15 judge calls from annotations.json (judge_error=1, preference=14)\n"
    s = cli("show", tmp_path / "calls")
    assert s.code == 0, s.err
    assert "no call   2 rows decided without a judge call (identical outputs: a draw)" in s.out
    # the failure is left out of the re-derived figure; the leaderboard's rule reads its 0 as a draw
    assert "n = 14, 1 judge failures left out (never draws)" in s.out
    assert "0 preferences differ" in s.out


def test_alpaca_eval_bad_row_is_one_line(tmp_path: Path, cli) -> None:
    src = tmp_path / "annotations.json"
    src.write_text(json.dumps([{"instruction": "x", "output_1": "a", "output_2": 3, "preference": 1.5}]))
    r = cli("import", "alpaca-eval", src, "-o", tmp_path / "calls")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field output_2: expected str\n")
    assert not (tmp_path / "calls").exists()


@pytest.mark.skipif(not REAL.is_dir(), reason="the real AlpacaEval files are fetched under /work/realfiles")
@pytest.mark.parametrize(("model", "win_rate", "se"), [("alpaca-7b", 2.591450540223603, 0.4870855382635108),
                                                        ("falcon-7b-instruct", 2.146617553167702, 0.454225792894195)])
def test_alpaca_eval_real_files_give_the_leaderboard_figure(model: str, win_rate: float, se: float) -> None:
    from audit.importers.alpaca_eval import import_alpaca_eval
    from audit.judge import pairwise

    imp = import_alpaca_eval(str(REAL / "alpaca_eval" / f"{model}.weighted_alpaca_eval_gpt4_turbo.annotations.json"))
    new = pairwise.win_rate(r.preference if r.status == "preference" else None for r in imp.rows)
    assert new.n_total == 805 and not any(r.extra.get("differs_from_recorded") for r in imp.rows)
    assert math.isclose(new.win_rate, win_rate, abs_tol=1e-7) and math.isclose(new.standard_error, se, abs_tol=1e-7)


def _arena_rows() -> list[dict]:
    ends = [e for e in _jsonl("arena_hard_judgment_endings.jsonl")]
    # question 1: the real first question's two games; question 2: a real game 0, a synthetic game 1
    return [{"uid": "08d2f41143ff411c83c02a521eb01948", "category": "arena-hard-v0.1", "judge": "gpt-4-1106-preview",
             "model": "gpt-3.5-turbo-0125", "baseline": "gpt-4-0314",
             "games": [{"user_prompt": "<|User Prompt|>...", "judgment": ends[0]["text"], "score": "A=B"},
                       {"user_prompt": "<|User Prompt|>...", "judgment": ends[1]["text"], "score": "A>B"}]},
            {"uid": "96d2e87e1be8490181fc62cbee45a18e", "category": "arena-hard-v0.1", "judge": "gpt-4-1106-preview",
             "model": "gpt-3.5-turbo-0125", "baseline": "gpt-4-0314",
             "games": [{"user_prompt": "...", "judgment": ends[2]["text"], "score": "A>B"},
                       {"user_prompt": "...", "judgment": ends[5]["text"], "score": None}]}]


def test_arena_hard_both_orderings_and_the_regex_rerun(tmp_path: Path, cli) -> None:
    src = tmp_path / "gpt-3.5-turbo-0125.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _arena_rows()))
    r = cli("import", "arena-hard", src, "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "4 judge calls" in r.out and "judge_error=1, preference=3" in r.out
    s = cli("show", tmp_path / "calls")
    # question 1: game 1 A>B (the model as A wins: 1), game 0 A=B (0.5): 75.00; question 2 dropped (game 1 unparsed)
    assert "score      75.00 over 1 questions (both games re-parsed; 1 dropped as upstream drops them)" in s.out


def test_arena_hard_bad_row(tmp_path: Path, cli) -> None:
    src = tmp_path / "m.jsonl"
    game = {"judgment": "[[A>B]]", "score": "A>B"}
    src.write_text(json.dumps({"uid": "u1", "judge": "j", "games": [game] * 3}) + "\n")
    r = cli("import", "arena-hard", src, "-o", tmp_path / "calls")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field games: expected two games, got 3\n")
    src.write_text(json.dumps({"uid": "u1", "judge": "j", "games": []}) + "\n")
    r = cli("import", "arena-hard", src, "-o", tmp_path / "calls")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 1: field games: expected two games, got 0\n")
    assert not (tmp_path / "calls").exists()


def _question_id_rows() -> list[dict]:
    """Rows of the question_id layout: real judgments (zeppombal/arena-hard-auto, see the README) in two
    questions; question 2's game 0 has no verdict (upstream recorded null), so only that game is dropped."""
    real = {c["score"]: c for c in _jsonl("arena_hard_4ce0f00_endings.jsonl") if c["source"] == "real"}
    return [{"question_id": "93c9b4bb32f4422f954c7af9ea2bdfcd", "model": "Nexusflow__Athene-V2-Chat",
             "judge": "gpt-3.5-turbo-0125",
             "games": [{"user_prompt": "...", "judgment": real["A>>B"]["text"], "score": "A>>B"},
                       {"user_prompt": "...", "judgment": real["B>>A"]["text"], "score": "B>>A"}]},
            {"question_id": "7bcf40b22c164f36a85efcbf169da647", "model": "Nexusflow__Athene-V2-Chat",
             "judge": "gpt-3.5-turbo-0125",
             "games": [{"user_prompt": "...", "judgment": real[None]["text"], "score": None},
                       {"user_prompt": "...", "judgment": real["A>B"]["text"], "score": "A>B"}]}]


def test_arena_hard_question_id_layout_is_read_with_its_own_regex(tmp_path: Path, cli) -> None:
    """The files gen_judgment.py wrote before 2025-04 name the question `question_id` (audit refused them:
    `field uid: missing`); their regex and scoring are that era's."""
    src = tmp_path / "Nexusflow__Athene-V2-Chat.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _question_id_rows()))
    r = cli("import", "arena-hard", src, "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "4 judge calls" in r.out and "judge_error=1, preference=3" in r.out
    from audit.packages import open_package

    rows = list(open_package(str(tmp_path / "calls")).iter_rows("judge_call_row.v1"))
    assert {f"{x.rule.name}@{x.rule.version}" for x in rows if x.rule} == {"arena_hard.verdict@4ce0f00"}
    assert all("baseline" in x.not_recorded and x.template_source is None for x in rows)
    assert not any(x.extra.get("differs_from_recorded") for x in rows)
    s = cli("show", tmp_path / "calls")
    # game 0 A>>B: the baseline wins 3 (0); game 1 B>>A: the baseline (B) wins 3 (0); question 2 game 1 A>B: 1
    assert ("score      14.29 over 7 battles of 2 questions (each game scored alone, as show_result.py before "
            "2025-04 does; 1 games without a scorable label dropped); from the recorded scores 14.29") in s.out


def test_arena_hard_recorded_scores_no_show_result_scores(tmp_path: Path, cli) -> None:
    """r4dm/arena-hard-local's fork recorded `[A=B]` (its regex kept a bracket) for judgments ending `[[A=B]]`:
    upstream's show_result gives such a game no battle; the re-run regex reads every one, and says they differ."""
    rows = [{"question_id": f"q{i}", "model": "Phi-3-medium-128k-instruct", "judge": "Qwen2-72B-Instruct-AWQ",
             "games": [{"user_prompt": "...", "judgment": "\nMy final verdict is tie: [[A=B]]", "score": "[A=B]"}] * 2}
            for i in range(3)]
    src = tmp_path / "Phi-3-medium-128k-instruct.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert cli("import", "arena-hard", src, "-o", tmp_path / "calls").code == 0
    s = cli("show", tmp_path / "calls")
    assert ("score      50.00 over 6 battles of 3 questions (each game scored alone, as show_result.py before "
            "2025-04 does; 0 games without a scorable label dropped); from the recorded scores none scorable") in s.out
    from audit.packages import open_package

    assert all(x.extra["differs_from_recorded"] for x in open_package(str(tmp_path / "calls")).iter_rows(
        "judge_call_row.v1"))
    for r in rows:
        r["games"] = [{"user_prompt": "...", "judgment": "\nTo\nAssistant", "score": None}] * 2  # (zeppombal's)
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "arena-hard", src, "-o", tmp_path / "none").code == 0
    assert ("score      none: no game has a label show_result scores; from the recorded scores none scorable"
            in cli("show", tmp_path / "none").out)


def test_arena_hard_a_file_of_both_layouts_is_refused(tmp_path: Path, cli) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text(json.dumps(_question_id_rows()[0]) + "\n" + json.dumps(_arena_rows()[0]) + "\n")
    r = cli("import", "arena-hard", src, "-o", tmp_path / "calls")
    assert (r.code, r.err) == (2, f"audit: error: {src}: row 2: field uid: a uid row in a file of question_id rows\n")
    assert not (tmp_path / "calls").exists()


def test_arena_hard_score_only_ensemble_file_gives_its_leaderboards_figure(tmp_path: Path, cli) -> None:
    """ko-arena-hard-auto's ensemble keeps each game's score and no judgment text; one row has one game.
    Its leaderboard prints 74.54: for the one-game row its show_result reuses game 0 as game 1 (read with game
    1's orientation); audit counts the one recorded game and leaves game 1 out as never recorded."""
    src = DATA / "ko_arena_hard_ensemble_o4-mini-high.jsonl"
    r = cli("import", "arena-hard", src, "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "1,000 judge calls" in r.out and "judge_error=1, preference=999" in r.out
    s = cli("show", tmp_path / "calls")
    assert "raw        1,000 of 1,000 calls: raw response not recorded" in s.out
    assert ("score      74.59 over 1,645 battles of 500 questions (each game scored alone, as show_result.py before "
            "2025-04 does; 1 games without a scorable label dropped); from the recorded scores 74.59") in s.out
    from audit.judge import pairwise

    games = [(g[0]["score"], (g[1] if len(g) > 1 else g[0])["score"]) for g in (o["games"] for o in _jsonl(src.name))]
    assert round(pairwise.arena_score_per_game(games).score, 2) == 74.54  # upstream's reuse of game 0, reproduced


REAL2 = Path("/work/realfiles/judge2")


@pytest.mark.skipif(not (REAL2 / "ko_arena_hard").is_dir(),
                    reason="the real ko-arena-hard files are fetched under /work/realfiles")
def test_ko_arena_hard_real_files_give_the_leaderboard_figures() -> None:
    """All 76 ensemble files against the leaderboard of 2025-04-23: equal to 2 decimals but for the baseline
    (upstream prints 50 for it by definition) and o4-mini-high (its one-game row, above)."""
    import csv

    from audit.importers.arena_hard import import_arena_hard
    from audit.judge import pairwise

    board = {r["model"]: float(r["score"]) for r in
             csv.DictReader((REAL2 / "ko_arena_hard/leaderboard/no_control.csv").open(encoding="utf-8"))}
    off = {}
    for f in sorted((REAL2 / "ko_arena_hard/ensemble").glob("*.jsonl")):
        imp = import_arena_hard(str(f))
        by_q: dict[str, dict[int, str | None]] = {}
        for row in imp.rows:
            by_q.setdefault(row.item_id, {})[row.position] = (row.parsed or {}).get("score")
        s = pairwise.arena_score_per_game([(g.get(0), g.get(1)) for g in by_q.values()])
        model = imp.rows[0].extra["model"]
        if abs(s.score - board[model]) > 0.005 + 1e-9:
            off[model] = (round(s.score, 2), board[model])
    assert len(board) == 76
    assert off == {"claude-3.7-sonnet": (50.65, 50.0), "o4-mini-high": (74.59, 74.54)}


def _hle_judged(tmp: Path) -> Path:
    def jr(ok: bool, conf: int) -> dict:
        return {"correct_answer": "42", "model_answer": "42" if ok else "41", "reasoning": "r",
                "correct": "yes" if ok else "no", "confidence": conf}
    obj = {f"q{i}": {"model": "m", "response": f"Answer: {i}", "judge_response": jr(i % 3 == 0, 90)}
           for i in range(150)}
    obj["q7"] = {"model": "m", "response": "Answer: 7"}  # never judged: upstream says rerun, and counts it wrong
    path = tmp / "judged_hle_m.json"
    path.write_text(json.dumps(obj))
    return path


def test_hle_judged_parsed_fields_only_and_the_figures(tmp_path: Path, cli) -> None:
    r = cli("import", "hle-judged", _hle_judged(tmp_path), "--questions", "200", "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "150 judge calls" in r.out and "judge_error=1" in r.out
    rows = [json.loads(x) for x in (tmp_path / "calls" / "calls.jsonl").read_text().splitlines()]
    assert all(x["raw_recorded"] is False and "raw" in x["not_recorded"] and x["protected"] for x in rows)
    s = cli("show", tmp_path / "calls")
    assert "raw        150 of 150 calls: raw response not recorded" in s.out
    correct = sum(1 for i in range(150) if i % 3 == 0 and i != 7)
    assert f"judged     accuracy {100 * correct / 200:.2f}%" in s.out and "n = 200 questions" in s.out
    assert "as upstream computes it (its top bin skipped)" in s.out


def test_inspect_model_graded_log_becomes_judge_calls(tmp_path: Path, cli) -> None:
    r = cli("import", "inspect-judged", DATA / "inspect_input-task_model_graded_fact.json", "-o", tmp_path / "calls")
    assert r.code == 0, r.err
    assert "1 judge calls" in r.out and "correct=1" in r.out
    row = json.loads((tmp_path / "calls" / "calls.jsonl").read_text())
    assert (row["model_requested"], row["model_served"]) == ("openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    assert row["extra"]["recorded"] == "C" and row["completion_tokens"] == 143
    assert row["messages"][0]["content"].startswith("\nYou are comparing a submitted answer to an expert answer")
    assert row["raw"].endswith("GRADE: C.")
