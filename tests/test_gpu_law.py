"""The GPU node's resource law of a training batch (slrpipe.resource_laws.batch_gpu_resources): it covers
the measurements it is set from (docs/cluster.md: the paper's largest batch on one H200, host peak
1372 MB with the jax sampler, 2661 MB with the numpy one; 8.9 GB of the card), and it lets several
batches share a card."""

import dataclasses
from pathlib import Path

import pytest
import yaml

from slrpipe.config import validate
from slrpipe.resource_laws import batch_gpu_resources, batch_resources, lanes_device_mb
from slrpipe.workflow import plan


@pytest.fixture(scope="module")
def largest():
    """config/paper.yaml's α = 0.5 batch of spiked ν = 1 (D = 14 142, n = 7071, 70 models)."""
    with open(Path(__file__).resolve().parents[1] / "config" / "paper.yaml") as f:
        p = plan(validate(yaml.safe_load(f)))
    (batch,) = [
        b
        for b in p.train_batches.values()
        if (b.members[0].model, b.members[0].nu, b.members[0].D) == ("spiked", 1.0, 14142)
    ]
    return batch


def test_the_gpu_law_covers_the_measured_peaks_and_lets_batches_share_a_card(largest):
    assert len(largest.members) == 70 and {m.sampler for m in largest.members} == {"jax"}
    law = batch_gpu_resources(largest)
    assert 1.1 * 1372 <= law["mem_mb"] <= 2 * 1372  # the host: no training set there
    assert 1.1 * 8.9 * 1000 <= law["gpu_mem_mb"] <= 2 * 8.9 * 1024
    assert law["mem_mb"] < batch_resources(largest)["mem_mb"] / 3  # the CPU law: 6290 MB
    assert 141 * 1024 // law["gpu_mem_mb"] >= 10  # an H200 holds ten such batches at once
    numpy = dataclasses.replace(
        largest, members=tuple(dataclasses.replace(m, sampler="numpy") for m in largest.members)
    )
    assert 1.1 * 2661 <= batch_gpu_resources(numpy)["mem_mb"] <= 2 * 2661


def test_the_lanes_term_counts_the_models_of_one_training_set(largest):
    # 70 models on 5 training sets: 14 lanes at a time
    law = batch_gpu_resources(largest)
    half = dataclasses.replace(largest, members=largest.members[::2])
    m = largest.members[0]
    per_set = lanes_device_mb(14, m.n, 3, m.D) - lanes_device_mb(7, m.n, 3, m.D)
    assert per_set > 0
    assert law["gpu_mem_mb"] - batch_gpu_resources(half)["gpu_mem_mb"] == pytest.approx(per_set, abs=1)
