"""The handcrafted policy: rules in the manner of PyDial's ``HDCPolicy`` over summary actions
(:class:`HandcraftedPolicy`), and the ``handcrafted[:nlg_seed=N]`` policy kind."""

from policies.handcrafted.policy import HandcraftedPolicy, handcrafted_kind

__all__ = ["HandcraftedPolicy", "handcrafted_kind"]
