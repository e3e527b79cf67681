"""Contributed optimizers (``optax.contrib``): Muon, schedule-free, Prodigy, SAM,
reduce-on-plateau, ADOPT, ACProp, MADGRAD, COCOB, D-Adaptation AdamW, DoG, DoWG,
AdEMAMix."""


from fluxion_optim.contrib._adam_variants import (
    MadgradState,
    acprop,
    adopt,
    madgrad,
    scale_by_acprop,
    scale_by_adopt,
    scale_by_madgrad,
)
from fluxion_optim.contrib._ademamix import (
    ScaleByAdemamixState,
    ScaleBySimplifiedAdEMAMixState,
    ademamix,
    scale_by_ademamix,
    scale_by_simplified_ademamix,
    simplified_ademamix,
)
from fluxion_optim.contrib._complex_valued import (
    SplitRealAndImaginaryArrays,
    SplitRealAndImaginaryState,
    split_real_and_imaginary,
)
from fluxion_optim.contrib._galore import (
    GaLoreDimensionNumbers,
    GaLoreState,
    galore,
    scale_by_galore,
)
from fluxion_optim.contrib._mechanic import MechanicState, mechanize
from fluxion_optim.contrib._momo import MomoAdamState, MomoState, momo, momo_adam
from fluxion_optim.contrib._muon import (
    MuonDimensionNumbers,
    MuonState,
    muon,
    orthogonalize_via_newton_schulz,
    scale_by_muon,
    scale_by_shape,
)
from fluxion_optim.contrib._parameter_free import (
    COCOBState,
    DAdaptAdamWState,
    DoGState,
    DoWGState,
    cocob,
    dadapt_adamw,
    dog,
    dowg,
    scale_by_cocob,
    scale_by_dog,
    scale_by_dowg,
)
from fluxion_optim.contrib._plateau import ReduceLROnPlateauState, reduce_on_plateau
from fluxion_optim.contrib._privacy import (
    DifferentiallyPrivateAggregateState,
    differentially_private_aggregate,
    dpsgd,
)
from fluxion_optim.contrib._prodigy import ProdigyState, prodigy
from fluxion_optim.contrib._sam import NormalizeState, SAMState, normalize, sam
from fluxion_optim.contrib._schedule_free import (
    ScheduleFreeState,
    schedule_free,
    schedule_free_adamw,
    schedule_free_eval_params,
    schedule_free_sgd,
)
from fluxion_optim.contrib._sophia import (
    HutchinsonState,
    SophiaState,
    hutchinson_estimator_diag_hessian,
    scale_by_sophia,
    sophia,
)

__all__ = [
    "ScaleByAdemamixState", "ScaleBySimplifiedAdEMAMixState", "ademamix", "scale_by_ademamix",
    "scale_by_simplified_ademamix", "simplified_ademamix",
    "COCOBState", "DAdaptAdamWState", "DoGState", "DoWGState", "MadgradState", "acprop",
    "adopt", "cocob", "dadapt_adamw", "dog", "dowg", "madgrad", "scale_by_acprop",
    "scale_by_adopt", "scale_by_cocob", "scale_by_dog", "scale_by_dowg", "scale_by_madgrad",
    "MuonDimensionNumbers", "MuonState", "NormalizeState", "ProdigyState",
    "ReduceLROnPlateauState", "SAMState", "ScheduleFreeState", "muon", "normalize",
    "orthogonalize_via_newton_schulz", "prodigy", "reduce_on_plateau", "sam", "scale_by_muon",
    "scale_by_shape", "schedule_free", "schedule_free_adamw", "schedule_free_eval_params",
    "schedule_free_sgd",
    "MechanicState", "mechanize", "SplitRealAndImaginaryArrays", "SplitRealAndImaginaryState",
    "split_real_and_imaginary", "DifferentiallyPrivateAggregateState",
    "differentially_private_aggregate", "dpsgd", "MomoState", "MomoAdamState", "momo",
    "momo_adam", "HutchinsonState", "SophiaState", "hutchinson_estimator_diag_hessian",
    "scale_by_sophia", "sophia", "GaLoreDimensionNumbers", "GaLoreState", "galore",
    "scale_by_galore",
]
