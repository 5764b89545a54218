"""The shipped profile with a trained state probe added: the probe-gated run then differs from the shipped default
only by the ``state-probe`` rule (same delta, same prompt), so the two are compared on the same questions.

``seakr calibrate --rules default,state-probe`` stores the probe (the ``state-probe`` rule's learned state) beside a
delta it calibrated itself on its lines; this copies only the probe (its weights, threshold, training lines, verdict)
into the shipped profile for the dataset's prompt, and writes it where ``seakr eval --calibrated --profile-dir DIR``
reads it:

    python experiments/probe_profile.py --probe-from DIR_OF_CALIBRATE --dataset hotpotqa --out DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from seakr_integrations.calibration import SHIPPED_PROFILES
from seakr_integrations.profile_names import profile_key

MODEL, LAYER, SOURCE, ESTIMATOR, K = "qwen2.5-coder-0.5b-instruct", 11, "mlp", "eigenscore", 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--probe-from", type=Path, required=True, help="profile dir of `seakr calibrate --rules default,state-probe`"
    )
    parser.add_argument("--dataset", choices=("hotpotqa", "2wiki"), required=True)
    parser.add_argument("--out", type=Path, required=True, help="profile dir to write")
    args = parser.parse_args()
    key = profile_key(MODEL, LAYER, SOURCE, ESTIMATOR, K)
    trained = json.loads((args.probe_from / f"{key}.json").read_text("utf-8"))
    probe = trained.get("rules", {}).get("state-probe")
    if not probe:
        raise SystemExit(
            f"{args.probe_from}/{key}.json has no probe: run seakr calibrate with --rules default,state-probe"
        )
    shipped = json.loads((SHIPPED_PROFILES / f"{key}__{args.dataset}-10ex.json").read_text("utf-8"))
    rules = {**shipped.get("rules", {}), "state-probe": probe}
    merged = {"dtype": "float32", **shipped, "rules": rules, "verdict": trained.get("verdict")}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{key}.json"
    path.write_text(json.dumps(merged, indent=2) + "\n", "utf-8")
    print(f"{path}: shipped delta {shipped['delta']}, probe threshold {probe['threshold']}")


if __name__ == "__main__":
    main()
