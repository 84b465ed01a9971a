"""The embedded default splits its queues: repairs in the API process, verifications apart."""

from __future__ import annotations

from bot.pipeline.embedded import restart_pause, split_queues, verification_worker_command
from tests.conftest import make_settings


def test_verification_queues_go_to_their_own_process(tmp_path):
    settings = make_settings(tmp_path)
    assert split_queues(settings) == (["repair"], ["cpu", "gpu.any"])
    gpu_host = make_settings(tmp_path, worker_queues=["repair", "gpu.H100_PCIe", "gpu.any"])
    assert split_queues(gpu_host) == (["repair"], ["gpu.H100_PCIe", "gpu.any"])
    assert split_queues(make_settings(tmp_path, worker_queues=["repair"])) == (["repair"], [])


def test_the_verification_process_is_this_interpreter_running_our_module():
    command = verification_worker_command(["cpu", "gpu.any"], 4242)
    assert command[1:] == [
        "-m",
        "bot.pipeline.verify.worker",
        "--queues",
        "cpu,gpu.any",
        "--parent",
        "4242",
    ]


def test_a_verification_process_that_keeps_dying_young_is_restarted_ever_more_slowly():
    assert restart_pause(3600, 8.0) == 1.0  # it lived: replace it at once
    pauses = [1.0]
    for _ in range(6):
        pauses.append(restart_pause(0.5, pauses[-1]))
    assert pauses == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
