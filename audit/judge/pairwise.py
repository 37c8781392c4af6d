"""Pairwise judges re-derived from their recorded text: AlpacaEval's preferences and win rate, Arena-Hard's games.

Pure functions over plain values; the importers (`audit.judge.imports`) feed them the upstream files.

AlpacaEval (tatsu-lab/alpaca_eval at cd543a149df89434d8a54582c0151c0b945c3d20):

- The swap bit (`is_switched_outputs`) is not stored in `annotations.json`. `PairwiseAnnotator` sets it with
  `RandomSwitchTwoColumnsProcessor` (`processors.py`): `random_seeded_choice(seed="is_switched_outputs" +
  instruction + str(seed), choices=[False, True])`, that is `random.Random(s).choices([False, True], k=1)[0]`
  (`utils.py`), seeded on the `instruction` column with the annotator's `seed`, 0 by default
  (`annotators/base.py`). `swap_bit` recomputes it; `raw_completion` shows the swapped order.
- Two identical outputs are a draw (1.5) without a judge call (no `raw_completion`).
- The win rate is `AbsoluteScoringRule().describe_head2head` (`metrics/helpers.py`): preferences of 0 are read as
  draws (1.5), values outside [1, 2] (NaN: a judge failure) are dropped, and on the rest `win_rate =
  mean(p - 1) * 100`, `standard_error = sem(p - 1) * 100` (pandas' sem: ddof 1). audit keeps a judge failure
  out and says so (`judge_error`); it is never a draw.

Arena-Hard (lmarena/arena-hard-auto at 196f6b826783b3da7310e361a805fa36f0be83f3, `show_result.py`
`load_judgments`): each question has two games, game 0 with the baseline as A and game 1 with the model as A; a
question with either game missing or unparsed is dropped. Scores per label: `A>B` 1, `A>>B` 1 x3 (weight 3),
`A=B` 0.5, `B>A` 0, `B>>A` 0 x3 ..., game 1's scores as they are and game 0's as `1 - s`; the model's score is
their mean (what `print_leaderboard` bootstraps).

Arena-Hard before 2025-04 (`show_result.py` at 4ce0f0087776158a4461162cbef1d9bb5464bb57,
`get_battles_from_judgment`; the `question_id` files): each game is a battle on its own, so a game without a
scorable label (A>>B, A>B, A=B, B>A, B>>A) is dropped alone and its question's other game still counts. The
Bradley-Terry fit (`compute_mle_elo`, no penalty, a tie as one win each way) of models that each met only the
baseline predicts, against the baseline, exactly the mean of the model's battle scores.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ALPACA_SWITCH_COLUMN = "is_switched_outputs"
ALPACA_DEFAULT_SEED = 0


def swap_bit(instruction: str, seed: int = ALPACA_DEFAULT_SEED) -> bool:
    """Whether AlpacaEval showed output_2 first for this instruction (its seeded rule, recomputed)."""
    return bool(random.Random(ALPACA_SWITCH_COLUMN + instruction + str(seed)).choices([False, True], k=1)[0])


@dataclass(frozen=True)
class WinRate:
    """AlpacaEval's head-to-head figures over the preferences it keeps."""

    win_rate: float
    """mean(preference - 1) x 100."""
    standard_error: float
    """Sample standard error of (preference - 1), x 100."""
    n_wins: int
    n_wins_base: int
    n_draws: int
    n_total: int
    """Preferences counted (judge failures left out)."""
    discrete_win_rate: float
    """AlpacaEval's ZeroOneScoringRule: wins 1, draws 0.5, losses 0, x 100."""


def win_rate(preferences: Iterable[float | None]) -> WinRate:
    """`describe_head2head` of AbsoluteScoringRule on `preferences` (None and NaN are judge failures: dropped)."""
    raw = [p for p in preferences if p is not None]
    n_draws = sum(1 for p in raw if p == 1.5 or p == 0)
    vals = [1.5 if p == 0 else float(p) for p in raw]
    kept = [p - 1 for p in vals if not math.isnan(p) and 1 <= p <= 2]
    n = len(kept)
    mean = sum(kept) / n if n else math.nan
    se = statistics.stdev(kept) / math.sqrt(n) if n > 1 else math.nan
    disc = [1.0 if p > 0.5 else 0.0 if p < 0.5 else 0.5 for p in kept]
    return WinRate(win_rate=mean * 100, standard_error=se * 100, n_wins=sum(1 for p in kept if p > 0.5),
                   n_wins_base=sum(1 for p in kept if p < 0.5), n_draws=n_draws, n_total=n,
                   discrete_win_rate=(sum(disc) / n * 100) if n else math.nan)


ARENA_LABEL_SCORES: dict[str, tuple[float, int]] = {
    "A>B": (1, 1), "A>>B": (1, 3), "A=B": (0.5, 1), "A<<B": (0, 3), "A<B": (0, 1),
    "B>A": (0, 1), "B>>A": (0, 3), "B=A": (0.5, 1), "B<<A": (1, 3), "B<A": (1, 1),
}
"""show_result.py's `label_to_score` with weight 3: (score for A, repeats)."""


def arena_scores(game0: str | None, game1: str | None) -> list[float] | None:
    """The model's scores for one question from the two games' labels; None when upstream drops the question."""
    if game0 is None or game1 is None or game0 not in ARENA_LABEL_SCORES or game1 not in ARENA_LABEL_SCORES:
        return None
    s1, k1 = ARENA_LABEL_SCORES[game1]
    s0, k0 = ARENA_LABEL_SCORES[game0]
    return [float(s1)] * k1 + [1.0 - s0] * k0


@dataclass(frozen=True)
class ArenaScore:
    """One model's Arena-Hard score against the baseline."""

    score: float
    """Mean of the per-battle scores, x 100."""
    questions: int
    """Questions scored (both games parsed)."""
    dropped: int
    """What upstream drops: questions (a game missing or unparsed) or, scoring each game alone, games."""
    battles: int


def arena_score(games: Sequence[tuple[str | None, str | None]]) -> ArenaScore:
    """The score over questions given as (game 0 label, game 1 label)."""
    scores: list[float] = []
    kept = 0
    for g0, g1 in games:
        s = arena_scores(g0, g1)
        if s is None:
            continue
        kept += 1
        scores.extend(s)
    return ArenaScore(score=100 * sum(scores) / len(scores) if scores else math.nan, questions=kept,
                      dropped=len(games) - kept, battles=len(scores))


ARENA_4CE0F00_LABEL_SCORES: dict[str, tuple[float, int]] = {
    "A>B": (1, 1), "A>>B": (1, 3), "A=B": (0.5, 1), "B>A": (0, 1), "B>>A": (0, 3)}
"""show_result.py's battles before 2025-04 with WEIGHT 3: (score for A, repeats); other labels are no battle."""


def arena_score_per_game(games: Sequence[tuple[str | None, str | None]]) -> ArenaScore:
    """The score as `show_result.py` before 2025-04 computes it: each game a battle of its own (game 0 with the
    baseline as A), a game without a scorable label dropped alone; `questions` counts those with a game kept."""
    scores: list[float] = []
    kept = dropped = 0
    for g0, g1 in games:
        counted = False
        for pos, label in ((0, g0), (1, g1)):
            if label is None or label not in ARENA_4CE0F00_LABEL_SCORES:
                dropped += 1
                continue
            s, k = ARENA_4CE0F00_LABEL_SCORES[label]
            scores.extend([float(s) if pos == 1 else 1.0 - s] * k)
            counted = True
        kept += counted
    return ArenaScore(score=100 * sum(scores) / len(scores) if scores else math.nan, questions=kept,
                      dropped=dropped, battles=len(scores))
