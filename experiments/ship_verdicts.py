"""Put the gate's verdict into the shipped default-preset profiles, so the bundled models say what their gate knows.

The shipped profiles (``experiments/ship_profiles.sh``) were made before ``seakr calibrate`` judged the gate.  The
verdict runs of ``docs/gate_signals.md`` (``runs/signals/verdicts/MODEL-DATASET.json``: ``seakr calibrate --start 200
--limit 100``, the default preset) read the same lines with the same model, prompt, k and read-out; a verdict's AUROC
and harm rate do not depend on delta, so the gate's own verdict (its estimator's, not the probe's: the shipped
profiles hold no probe) is copied as it is, and each shipped delta stays.  A profile whose verdict says the gate
knows nothing then warns once when used (``UninformativeGateWarning``).

    python experiments/ship_verdicts.py
"""

from __future__ import annotations

import json
from pathlib import Path

from seakr_integrations.calibration import SHIPPED_PROFILES

ROOT = Path(__file__).resolve().parents[1]
SAME = ("model", "layer", "source", "estimator", "k", "dataset", "prompt")
"""What a verdict run and a shipped profile must share for the verdict to be the profile's."""


def main() -> None:
    for run in sorted((ROOT / "runs" / "signals" / "verdicts").glob("*.json")):
        verdict = json.loads(run.read_text("utf-8"))
        style = verdict["prompt"]["exemplar_style"]
        exemplars = verdict["prompt"]["num_exemplars"]
        name = Path(verdict["profile"]).name.removesuffix(".json") + f"__{style}-{exemplars}ex.json"
        path = SHIPPED_PROFILES / name
        shipped = json.loads(path.read_text("utf-8"))
        differ = [key for key in SAME if shipped.get(key) != verdict.get(key)]
        if differ:
            raise SystemExit(f"{run.name} is not {name}'s verdict: {', '.join(differ)} differ")
        shipped["verdict"] = {verdict["estimator"]: verdict["verdict"][verdict["estimator"]]}
        path.write_text(json.dumps(shipped, indent=2) + "\n", "utf-8")
        v = shipped["verdict"][verdict["estimator"]]
        interval = f"{v['auroc_low']:.2f}-{v['auroc_high']:.2f}"
        print(f"{name}: AUROC {v['auroc']:.2f} ({interval}), informative {v['informative']}")


if __name__ == "__main__":
    main()
