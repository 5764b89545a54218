"""The paper's logit/probability-based alternatives to EigenScore (SeaKR Table 3), as pure functions.

Each lives in its own module (``perplexity``, ``multi_perplexity``, ``ln_entropy``, ``energy``) with its registry
entry; this module gathers the formulas for code that imported them from here.
"""

from seakr_integrations.uncertainty.energy import energy
from seakr_integrations.uncertainty.ln_entropy import ln_entropy
from seakr_integrations.uncertainty.multi_perplexity import multi_perplexity
from seakr_integrations.uncertainty.perplexity import perplexity

__all__ = ["energy", "ln_entropy", "multi_perplexity", "perplexity"]
