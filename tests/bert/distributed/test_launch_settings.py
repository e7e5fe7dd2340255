"""The launch's settings (bert.distributed.launch_settings): a good run.launch block loads and reaches the ranks'
environment; a bad name, interface, NUMA node or thread count is refused with a message naming the field."""

import re

import pytest

from bert.distributed.launch_settings import LaunchSpec
from bert.launch.plan import launch_env
from bert.system import load_descriptor
from bert.typed_config import ConfigError, from_dict
from tests.helpers.systems import unchecked_descriptor, write_unchecked


def test_the_interface_setting_reaches_gloo_and_nccl_and_is_checked(tmp_path):
    system = load_descriptor("cpu_micro").variant({"launch.socket_ifname": "ib0,ib1"})
    assert launch_env(system.run.launch, "torchrun", "h0") == {"GLOO_SOCKET_IFNAME": "ib0,ib1",
                                                                "NCCL_SOCKET_IFNAME": "ib0,ib1"}
    bad = write_unchecked(tmp_path, "bad", unchecked_descriptor({"launch.socket_ifname": "^docker"}))
    with pytest.raises(ConfigError, match=r"run.launch.socket_ifname: '\^docker' is not a network interface name"):
        load_descriptor(bad)
    twice = write_unchecked(tmp_path, "twice", unchecked_descriptor(
        {"launch.socket_ifname": "eth0", "launch.env": {"NCCL_SOCKET_IFNAME": "eth1"}}))
    with pytest.raises(ConfigError, match="run.launch.env: sets NCCL_SOCKET_IFNAME beside run.launch.socket_ifname"):
        load_descriptor(twice)


def test_a_good_block_loads_with_its_cpu_binding():
    spec = from_dict(LaunchSpec, {"env": {"NCCL_IB_HCA": "mlx5"}, "master_port": 29600, "socket_ifname": "eth0",
                                  "cpu_binding": {"mode": "node", "numa_nodes": [1, 0], "omp_num_threads": 4}},
                     "sys.json", "run.launch")
    assert (spec.env, spec.master_port, spec.cpu_binding.numa_nodes) == ({"NCCL_IB_HCA": "mlx5"}, 29600, [1, 0])
    assert spec.socket_env() == {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}
    assert from_dict(LaunchSpec, {}, "sys.json", "run.launch").socket_env() == {}


@pytest.mark.parametrize("block, message", [
    ({"env": {"1BAD": "x"}}, "run.launch.env: '1BAD' is not an environment variable name"),
    ({"env": {"A=B": "x"}}, "run.launch.env: 'A=B' is not an environment variable name"),
    ({"socket_ifname": "eth0,a_name_of_16_chars"}, "run.launch.socket_ifname: 'a_name_of_16_chars' is not a network"),
    ({"master_port": 70000}, "run.launch.master_port: "),
    ({"cpu_binding": {"numa_nodes": [0, -1]}}, "run.launch.cpu_binding.numa_nodes: -1 is not a NUMA node number"),
    ({"cpu_binding": {"omp_num_threads": 0}}, "run.launch.cpu_binding.omp_num_threads: "),
    ({"cpu_binding": {"mode": "socket"}}, "run.launch.cpu_binding.mode: expected one of 'none', 'node', 'exclusive'"),
])
def test_a_bad_value_is_refused_naming_the_field(block, message):
    with pytest.raises(ConfigError, match=f"^sys.json: {re.escape(message)}"):
        from_dict(LaunchSpec, block, "sys.json", "run.launch")
