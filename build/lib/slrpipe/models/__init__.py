"""Estimators: the attention module (softmax/linear/erf/softplus_norm) and the Bayes oracle."""

from slrpipe.models.attention import Attention, attention_apply, fields
from slrpipe.models.bayes import bayes_predict

__all__ = ["Attention", "attention_apply", "bayes_predict", "fields"]
