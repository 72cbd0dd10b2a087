"""Guard evaluation and host/device inference, expression by expression."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from vllm_syncgate.errors import ConfigError
from vllm_syncgate.scan.config import Patterns, load_config, parse_config
from vllm_syncgate.scan.guards import Guard, GuardEvaluator, installed_opt_ins
from vllm_syncgate.scan.values import Facts, Pin, Place, ValueModel

CONFIG = load_config()


def truth(expression: str, facts: Facts | None = None) -> tuple[bool | None, str | None]:
    result = GuardEvaluator(CONFIG, facts or Facts()).evaluate(ast.parse(expression, mode="eval").body)
    return result.value, result.guard.value if result.guard else None


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("self.speculator is not None", (False, "speculation")),
        ("self.speculator is None", (True, "speculation")),
        ("self.num_spec_tokens > 0", (False, "speculation")),
        ("num_spec_tokens == 0", (True, "speculation")),
        ("self.speculative_config.method == 'eagle'", (False, "speculation")),
        ("num_spec_tokens < 2", (None, None)),  # numeric comparisons other than with 0/1
        ("isinstance(self.drafter, object)", (False, "speculation")),
        # polarity: a guard means "runs only when X is on"; async scheduling is off by default
        ("not self.use_async_scheduling", (True, "async_scheduling")),
        ("self.scheduler_config.async_scheduling", (False, "async_scheduling")),
        ("max_gen_len == 1", (True, "speculation")),  # one token per request without drafts
        ("max_gen_len != 1", (False, "speculation")),
        ("max_gen_len > 1", (False, "speculation")),
        ("is_profile", (False, "warmup")),
        ("self.use_async_scheduling and self.speculator is not None", (False, "speculation")),
        ("self.speculator is not None or not self.use_async_scheduling", (True, "async_scheduling")),
        ("self.speculator is None or logprobs", (True, "speculation")),
        ("logprobs is not None", (None, None)),
        ("self.kv_cache_spec is not None", (None, None)),  # "spec" alone is not speculation
        ("self.speculator is not None and logprobs", (False, "speculation")),
        ("logprobs and self.use_async_scheduling", (False, "async_scheduling")),
        ("logprobs or not self.use_async_scheduling", (True, "async_scheduling")),
        # acceptance is of draft tokens: a tree drafter's accepted nodes, accepted-token counts
        ("output.tree_accepted_node_indices is None", (True, "speculation")),
        ("self.num_accepted_tokens is not None", (False, "speculation")),
    ],
)
def test_condition_in_the_protected_configuration(expression, expected):
    assert truth(expression) == expected


def test_broken_variant_acceptance_names_are_no_speculation():
    """Without the ``*accepted*`` glob the accepted nodes of a tree drafter decide nothing."""
    globs = tuple(g for g in CONFIG.speculation.globs if g != "*accepted*")
    assert len(globs) == len(CONFIG.speculation.globs) - 1
    config = dataclasses.replace(CONFIG, speculation=Patterns(globs))
    test = ast.parse("output.tree_accepted_node_indices is None", mode="eval").body
    assert GuardEvaluator(config, Facts()).evaluate(test).value is None


def test_attribute_created_only_under_async_scheduling_is_present():
    facts = Facts(presence={"prepare_event": (True, "async_scheduling")})
    assert truth("self.prepare_event is not None", facts) == (True, "async_scheduling")
    assert truth("self.prepare_event is None", facts) == (False, "async_scheduling")


def test_guard_order_weakest_first():
    assert [g.value for g in sorted(Guard, key=lambda g: g.rank)] == [
        "none", "unknown_residence", "allowed", "opt_in", "warmup", "async_scheduling",
        "speculation",
    ]


def places(source: str, facts: Facts | None = None) -> dict[str, Place]:
    """Place of the last expression of each ``probe_*`` line in one function."""
    function = ast.parse(source).body[0]
    model = ValueModel(CONFIG, facts or Facts())
    model.bind_function(function)
    found = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and node.targets[0].id.startswith("probe_"):
            found[node.targets[0].id] = model.place(node.value)
    return found


def test_host_and_device_inference():
    source = '''
def f(self, sampled: torch.Tensor, positions: np.ndarray, n: int, other):
    cu = np.cumsum(positions)
    host = sampled.cpu()
    buf = torch.empty(4, dtype=torch.int64)
    dev = torch.zeros(4, device=self.device)
    probe_param = sampled
    probe_numpy = positions[0]
    probe_cumsum = cu[-1]
    probe_cpu_result = host[0]
    probe_shape = sampled.shape[0]
    probe_suffix = self.token_ids_cpu[:n]
    probe_np_attr = self.buffer.np[:n]
    probe_gpu_attr = self.buffer.gpu[:n]
    probe_alloc_host = buf
    probe_alloc_device = dev
    probe_to_cpu = sampled.to("cpu", non_blocking=True)
    probe_unknown = other
    probe_sum = dev.sum()
'''
    found = places(source)
    assert found == {
        "probe_param": Place.DEVICE,
        "probe_numpy": Place.HOST,
        "probe_cumsum": Place.HOST,
        "probe_cpu_result": Place.HOST,
        "probe_shape": Place.HOST,
        "probe_suffix": Place.HOST,
        "probe_np_attr": Place.HOST,
        "probe_gpu_attr": Place.DEVICE,
        "probe_alloc_host": Place.HOST,
        "probe_alloc_device": Place.DEVICE,
        "probe_to_cpu": Place.HOST,
        "probe_unknown": Place.UNKNOWN,
        "probe_sum": Place.DEVICE,
    }


def test_pinning_inference():
    function = ast.parse('''
def f(self):
    a = torch.empty(4, pin_memory=True)
    b = torch.empty(4, pin_memory=self.pin_memory)
    c = torch.empty(4)
    d = torch.from_numpy(x)
    e = torch.empty(4).pin_memory()
''').body[0]
    model = ValueModel(CONFIG, Facts(pin={"pinned_buf": Pin.PINNED}))
    model.bind_function(function)
    pins = {name: model.pin(ast.Name(name)) for name in "abcde"}
    assert pins == {"a": Pin.PINNED, "b": Pin.PINNED, "c": Pin.PAGEABLE, "d": Pin.PAGEABLE,
                    "e": Pin.PINNED}
    assert model.pin(ast.parse("self.pinned_buf[:3]", mode="eval").body) is Pin.PINNED


def test_config_rejects_unknown_keys_and_bad_values():
    good = {
        "entries": {"classes": ["*Runner"], "methods": ["step"]},
        "guards": {k: [] for k in ("speculation", "async_scheduling", "warmup",
                                   "warmup_functions", "allowed_contexts")},
        "values": {"host": [], "device": []},
    }
    assert parse_config(good, "x.toml").entry_methods == ("step",)
    with pytest.raises(ConfigError, match=r"entries\.colour: unknown key"):
        parse_config({**good, "entries": {**good["entries"], "colour": []}}, "x.toml")
    with pytest.raises(ConfigError, match=r"values\.host: must be a list of non-empty strings"):
        parse_config({**good, "values": {"host": "x_cpu", "device": []}}, "x.toml")
    with pytest.raises(ConfigError, match="guards: missing table"):
        parse_config({k: v for k, v in good.items() if k != "guards"}, "x.toml")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # a host-only branch is never the accelerator's step
        ("all_token_ids.device.type == 'cpu'", (False, "opt_in")),
        ("all_token_ids.device.type != 'cpu'", (True, "opt_in")),
        ("x.device.type == 'cuda'", (None, None)),
        # switches the installed vLLM's config defaults to off (no name list mentions them)
        ("self.model_config.enable_return_routed_experts", (False, "opt_in")),
        ("self.vllm_config.watermark_config is None", (True, "opt_in")),
        ("not self.model_config.enforce_eager", (True, "opt_in")),
        ("enable_return_routed_experts", (None, None)),  # a bare local is not the config field
    ],
)
def test_structural_guards(expression, expected):
    if expected[1] == "opt_in" and "config" in expression and not installed_opt_ins():
        pytest.skip("vllm is not installed")
    assert truth(expression) == expected


def test_dataflow_wins_over_names():
    found = places(
        "def f(self, logits, ids_cpu: torch.Tensor, counts_cpu):\n"
        "    token_ids_cpu = self.input_ids.gpu[:4]\n"
        "    probe_staged_device = token_ids_cpu\n"
        "    probe_host_half = self.input_ids.cpu[:4]\n"
        "    probe_np_half = self.input_ids.np[:4]\n"
        "    probe_cat = torch.cat([self.input_ids.gpu[:2], probe_host_half])\n"
        "    probe_gathered = tensor_model_parallel_all_gather(self.input_ids.gpu)\n"
        "    probe_like = torch.empty_like(self.input_ids.gpu)\n"
        "    probe_named_param = ids_cpu\n"  # the name beats a bare torch.Tensor annotation
        "    probe_unknown_param = logits\n"
        "    probe_field = self.model(ids_cpu).hidden_states\n"
    )
    assert found == {
        "probe_staged_device": Place.DEVICE,
        "probe_host_half": Place.HOST,
        "probe_np_half": Place.HOST,
        "probe_cat": Place.DEVICE,
        "probe_gathered": Place.DEVICE,
        "probe_like": Place.DEVICE,
        "probe_named_param": Place.HOST,
        "probe_unknown_param": Place.UNKNOWN,
        "probe_field": Place.DEVICE,
    }


def test_record_fields_annotated_as_host_data_stay_on_the_host():
    found = places(
        "def f(self):\n"
        "    out = self.model()\n"
        "    probe_req_ids = out.req_ids\n"
        "    probe_logits = out.logits\n",
        Facts(annotated={"req_ids": Place.HOST}),
    )
    assert found == {"probe_req_ids": Place.HOST, "probe_logits": Place.DEVICE}
