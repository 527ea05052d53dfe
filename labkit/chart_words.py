"""Words for a chart: the sentence that says what a chart of RMSNorm beside LayerNorm shows.

A chart's summary names each norm's extremes and where the two part (the largest
``|RMSNorm - LayerNorm|``); it is the chart's caption and its accessible name, so a reader who
cannot see the chart reads the same facts. It reads the finite values the chart draws; a second
sentence counts the values that are not finite.

``where`` holds the chart's positions (coordinate indices, offsets, widths); an extreme shared by
several positions is quoted at the first of them.

``noise``: the rounding level of the drawn values, from what they were computed from (a chart
of LayerNorm's moves under an offset it cancels draws float64 rounding, not a move). A value
below it reads ``≈ 0``; a group of values (a norm, a curve) whose largest minus smallest is at
most it is flat, and its words say so instead of quoting extremes at positions: the key gains
``_flat`` when every group is flat, else ``_<group>_flat`` for each flat group. A chart whose
caller gives no noise (0) has no flat groups."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from labkit.claims import Claim

# The sentence for a chart with no finite value of one of its two norms to quote.
NO_FINITE = "charts.no_finite"
NOT_FINITE = "charts.not_finite"
# Rounding of a float64 value relative to the size of what it was computed from, a few ulps
# summed over a few thousand coordinates: ``noise = ROUNDING * scale`` for most charts.
ROUNDING = 1e-12


def rounding_of(*arrays: object) -> float:
    """``ROUNDING`` times the largest finite |value| in ``arrays`` (0 when none is finite)."""
    values = np.concatenate([np.ravel(np.asarray(a, dtype=np.float64)) for a in arrays])
    values = np.abs(values[np.isfinite(values)])
    return ROUNDING * float(values.max()) if values.size else 0.0


# The sentence for a chart of lines with a group that has no finite value to quote.
LINES_NO_FINITE = "charts.lines_no_finite"


def _extremes(values: np.ndarray, where: Sequence, name: str) -> dict[str, object]:
    """``{name}_lo``, ``{name}_lo_at``, ``{name}_hi``, ``{name}_hi_at`` over finite values."""
    finite = np.isfinite(values)
    lo = int(np.argmin(np.where(finite, values, np.inf)))
    hi = int(np.argmax(np.where(finite, values, -np.inf)))
    return {
        f"{name}_lo": float(values[lo]),
        f"{name}_lo_at": _position(where[lo]),
        f"{name}_hi": float(values[hi]),
        f"{name}_hi_at": _position(where[hi]),
    }


def _not_finite(chart: str, *arrays: np.ndarray, text: str = NOT_FINITE) -> dict[str, Claim]:
    """``{"not_finite": claim}`` counting the values of ``arrays`` that are not finite, or {}."""
    bad = sum(int(np.sum(~np.isfinite(a))) for a in arrays)
    fields = {"count": bad, "total": sum(int(np.size(a)) for a in arrays), "chart": chart}
    return {"not_finite": Claim(text, fields)} if bad else {}


def _position(value: object) -> object:
    """A position as the sentence quotes it: an int index stays an int, a number a float."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def _flat_suffix(flat: Sequence[str], names: Sequence[str]) -> str:
    """The key's ending for the flat groups ``flat`` among ``names`` (see the module's note)."""
    if not flat:
        return ""
    return "_flat" if len(flat) == len(names) else "".join(f"_{n}" for n in flat) + "_flat"


def _noise_of(fields: Mapping[str, object], noise: float) -> dict[str, float]:
    """The rounding level of each value field (positions, rows and lines are not values)."""
    positions = ("_at", "_row", "_col", "_line")
    return {k: noise for k in fields if not k.endswith(positions)} if noise > 0 else {}


def pair_words(
    key: str, where: Sequence, rms: np.ndarray, layer: np.ndarray, *, noise: float = 0.0
) -> dict[str, Claim]:
    """The summary of a chart that draws ``rms`` and ``layer`` at the positions ``where``.

    Returns ``{"words": claim}``, and ``{"not_finite": claim}`` where a drawn value is not finite.
    The words' key is ``key`` where the norms part, ``key + "_equal"`` where they are equal (within
    ``noise``) wherever both are finite, a flat ending where a norm is flat (the module's note),
    and ``charts.no_finite`` where a norm has no finite value (it and ``not_finite`` carry
    ``chart=key``)."""
    rms, layer = (np.asarray(a, dtype=np.float64) for a in (rms, layer))
    if rms.shape != layer.shape or rms.shape != (len(where),):
        raise ValueError("rms, layer and where must have one entry per position")
    out = _not_finite(key, rms, layer)
    both = np.isfinite(rms) & np.isfinite(layer)
    if not np.any(np.isfinite(rms)) or not np.any(np.isfinite(layer)) or not np.any(both):
        return out | {"words": Claim(NO_FINITE, {"total": 2 * len(where), "chart": key})}
    fields = _extremes(rms, where, "rms") | _extremes(layer, where, "layer")
    gaps = np.where(both, np.abs(rms - layer), -np.inf)
    at = int(np.argmax(gaps))
    fields |= {"gap": float(gaps[at]), "gap_at": _position(where[at])}
    flat = [
        n for n in ("rms", "layer") if noise > 0 and fields[f"{n}_hi"] - fields[f"{n}_lo"] <= noise
    ]
    if flat:
        key += _flat_suffix(flat, ("rms", "layer"))
    elif gaps[at] <= noise:
        key += "_equal"
    return out | {"words": Claim(key, fields, _noise_of(fields, noise))}


def point_words(
    key: str, rms: Sequence[float], layer: Sequence[float], *, noise: float = 0.0, **fields: float
) -> Claim:
    """The summary of a picture of points: where RMSNorm(x) and LayerNorm(x) sit (``rms_0``,
    ``rms_1``, … and ``layer_0``, …) and ``gap``, their distance. ``fields`` are the other numbers
    the sentence quotes. A non-finite coordinate gives the key ``key + "_not_finite"`` and no
    distance. A coordinate or a distance below ``noise`` reads ``≈ 0``."""
    a, b = (np.asarray(v, dtype=np.float64) for v in (rms, layer))
    values = {f"rms_{i}": float(v) for i, v in enumerate(a)}
    values |= {f"layer_{i}": float(v) for i, v in enumerate(b)}
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return Claim(f"{key}_not_finite", values | dict(fields), _noise_of(values, noise))
    # In units of the larger coordinate, so that the squares neither overflow nor underflow.
    scale = float(np.max(np.abs(np.concatenate([a, b]))))
    gap = float(np.linalg.norm((a - b) / scale)) * scale if scale > 0 else 0.0
    values["gap"] = gap
    return Claim(key, values | dict(fields), _noise_of(values, noise))


def grid_words(
    key: str, rms: np.ndarray, layer: np.ndarray, *, noise: float = 0.0
) -> dict[str, Claim]:
    """The summary of two heat maps of one shape (rows, columns), RMSNorm's and LayerNorm's:
    :func:`pair_words` over their entries, each position quoted as ``{name}_row`` and
    ``{name}_col`` (from 0, as the heat maps' axes count) instead of ``{name}_at``."""
    rms, layer = (np.asarray(a, dtype=np.float64) for a in (rms, layer))
    if rms.ndim != 2 or rms.shape != layer.shape:
        raise ValueError("rms and layer must be matrices of one shape")
    rows, cols = rms.shape
    where = [(i, j) for i in range(rows) for j in range(cols)]
    out = pair_words(key, where, rms.ravel(), layer.ravel(), noise=noise)
    words = out["words"]
    fields: dict[str, object] = {}
    for name, value in words.fields.items():
        if name.endswith("_at"):
            stem = name.removesuffix("_at")
            fields |= {f"{stem}_row": int(value[0]), f"{stem}_col": int(value[1])}
        else:
            fields[name] = value
    return out | {"words": Claim(words.key, fields, words.noise)}


def lines_words(
    key: str,
    rows: Sequence,
    where: Sequence,
    grids: Mapping[str, np.ndarray],
    *,
    noise: float = 0.0,
) -> dict[str, Claim]:
    """The summary of a chart of lines that are not a pair of norms (eps values, dtypes, running
    sums): ``grids[name]`` has one line per entry of ``rows`` (an eps, a dtype) and one value per
    position of ``where``. A 1-D array is one line.

    Returns ``{"words": claim}`` with ``{name}_lo``, ``{name}_lo_row``, ``{name}_lo_at`` and the
    same for ``hi``: each name's smallest and largest finite value, the line and the position that
    hold it (the first line, then the first position, of several). Values that are not finite add
    ``{"not_finite": claim}``, counted over the whole chart. A group with no finite value at all
    makes the words ``charts.lines_no_finite``, which counts them too. A group whose values lie
    within ``noise`` of each other is flat (see the module's note)."""
    shaped = {}
    for name, grid in grids.items():
        grid = np.asarray(grid, dtype=np.float64)
        shaped[name] = grid.reshape(1, -1) if grid.ndim == 1 else grid
        if shaped[name].shape != (len(rows), len(where)):
            raise ValueError(f"{name!r} needs one row per line and one column per position")
    total = sum(g.size for g in shaped.values())
    bad = int(sum(np.sum(~np.isfinite(g)) for g in shaped.values()))
    if any(not np.any(np.isfinite(g)) for g in shaped.values()):
        return {"words": Claim(LINES_NO_FINITE, {"count": bad, "total": total, "chart": key})}
    out = _not_finite(key, *shaped.values())
    fields: dict[str, object] = {}
    for name, grid in shaped.items():
        finite = np.isfinite(grid)
        for end, masked in (
            ("lo", np.where(finite, grid, np.inf).argmin()),
            ("hi", np.where(finite, grid, -np.inf).argmax()),
        ):
            row, at = np.unravel_index(int(masked), grid.shape)
            fields[f"{name}_{end}"] = float(grid[row, at])
            fields[f"{name}_{end}_row"] = _position(rows[row])
            fields[f"{name}_{end}_at"] = _position(where[at])
    flat = [n for n in shaped if noise > 0 and fields[f"{n}_hi"] - fields[f"{n}_lo"] <= noise]
    out["words"] = Claim(key + _flat_suffix(flat, list(shaped)), fields, _noise_of(fields, noise))
    return out


# The sentence for a chart of one series (or of peaks) with no finite value to quote.
NO_FINITE_VALUES = "charts.no_finite_values"
NO_FINITE_PANEL = "charts.no_finite_panel"


def series_words(
    key: str, where: Sequence, values: np.ndarray, *, rtol: float = 0.0
) -> dict[str, Claim]:
    """The summary of a chart of one series (attention weights per key, say): its smallest and
    largest finite value and where (``lo``, ``lo_at``, ``hi``, ``hi_at``), with the key
    ``key + "_equal"`` when every finite value is the same: exactly, or with ``rtol`` > 0 when
    largest minus smallest is at most ``rtol`` times the larger of their sizes (values equal up
    to rounding, such as keys of norm √d). Values that are not finite are counted as in
    :func:`pair_words` (``not_finite``); none finite gives ``charts.no_finite_values``."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(where),):
        raise ValueError("values and where must have one entry per position")
    out = _not_finite(key, values)
    if not np.any(np.isfinite(values)):
        return out | {"words": Claim(NO_FINITE_VALUES, {"total": len(where), "chart": key})}
    fields = {k.removeprefix("v_"): v for k, v in _extremes(values, where, "v").items()}
    span = fields["hi"] - fields["lo"]
    equal = span <= rtol * max(abs(fields["lo"]), abs(fields["hi"]))
    return out | {"words": Claim(f"{key}_equal" if equal else key, fields)}


def peak_words(key: str, grids: dict[str, np.ndarray]) -> dict[str, Claim]:
    """The summary of heat maps, one per name in ``grids``: each one's largest finite entry
    ``{name}_hi`` at ``{name}_hi_row``, ``{name}_hi_col`` (from 0; the first such entry, row by
    row). Entries that are not finite are counted (``not_finite``); a heat map with no finite
    entry gives ``charts.no_finite_panel`` instead of the words."""
    grids = {name: np.asarray(grid, dtype=np.float64) for name, grid in grids.items()}
    total = sum(grid.size for grid in grids.values())
    out = _not_finite(key, *grids.values())
    if not all(np.any(np.isfinite(grid)) for grid in grids.values()):
        return out | {"words": Claim(NO_FINITE_PANEL, {"total": total, "chart": key})}
    fields: dict[str, object] = {}
    for name, grid in grids.items():
        masked = np.where(np.isfinite(grid), grid, -np.inf)
        row, col = np.unravel_index(int(np.argmax(masked)), grid.shape)
        fields |= {f"{name}_hi": float(grid[row, col]), f"{name}_hi_row": int(row)}
        fields[f"{name}_hi_col"] = int(col)
    return out | {"words": Claim(key, fields)}


def runs_words(
    keys: Mapping[str, str],
    groups: Mapping[str, Sequence[tuple[object, Sequence, Sequence[float]]]],
    *,
    chart: str,
    not_finite: str = NOT_FINITE,
) -> dict[str, Claim]:
    """The summary of a chart of runs whose lines need not share their positions (each training
    run validated at its own seconds, runs cut short at different steps): ``groups[name]`` holds
    each line as ``(label, where, values)``, one value per position.

    Returns, for each group with a finite value, ``{name: claim}`` (its text ``keys[name]``)
    with ``lo``, ``lo_line``, ``lo_at``, ``hi``, ``hi_line`` and ``hi_at``, as in
    :func:`lines_words`. Values that are not finite are not drawn: they add
    ``{"not_finite": claim}`` (the text ``not_finite``), counted over every group."""
    out: dict[str, Claim] = {}
    drawn: list[np.ndarray] = []
    for name, lines in groups.items():
        fields: dict[str, object] = {}
        for label, where, values in lines:
            values = np.asarray(values, dtype=np.float64)
            if values.shape != (len(where),):
                raise ValueError(f"{name!r}: a line needs one value per position")
            finite = np.isfinite(values)
            drawn.append(values)
            if not np.any(finite):
                continue
            lo = int(np.argmin(np.where(finite, values, np.inf)))
            hi = int(np.argmax(np.where(finite, values, -np.inf)))
            # A later line replaces an extreme only when it goes beyond it: ties keep the first.
            if "lo" not in fields or values[lo] < fields["lo"]:
                fields |= {"lo": float(values[lo]), "lo_line": _position(label)}
                fields["lo_at"] = _position(where[lo])
            if "hi" not in fields or values[hi] > fields["hi"]:
                fields |= {"hi": float(values[hi]), "hi_line": _position(label)}
                fields["hi_at"] = _position(where[hi])
        if fields:
            out[name] = Claim(keys[name], fields)
    return out | _not_finite(chart, *drawn, text=not_finite)
