import pytest
import torch
from torch import nn

from runtime.faults import FaultInjector, InjectedFault, fault_point


def test_fault_point_is_a_no_op_without_an_injector():
    fault_point("anything")


def test_injector_raises_at_the_chosen_call_only():
    with FaultInjector("step", at_call=3) as faults:
        fault_point("step")
        fault_point("other")
        fault_point("step")
        with pytest.raises(InjectedFault) as info:
            fault_point("step")
        fault_point("step")
    assert (info.value.point, info.value.call) == ("step", 3)
    assert faults.fired and faults.counts["step"] == 4
    fault_point("step")  # inactive again after the block


def test_recording_injector_lists_hits_in_order():
    with FaultInjector() as recorder:
        fault_point("a")
        fault_point("b")
        fault_point("a")
    assert recorder.hits == [("a", 1), ("b", 1), ("a", 2)]
    assert not recorder.fired


def test_attached_module_raises_at_its_nth_call_and_detaches_on_exit():
    layer = nn.Linear(2, 2)
    x = torch.zeros(1, 2)
    with FaultInjector("draft_model", at_call=2) as faults:
        faults.attach(layer, "draft_model")
        layer(x)
        with pytest.raises(InjectedFault):
            layer(x)
    layer(x)  # hook removed
    assert faults.counts["draft_model"] == 2


def test_at_call_counts_from_one():
    with pytest.raises(ValueError):
        FaultInjector("x", at_call=0)
