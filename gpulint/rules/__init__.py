"""gpulint's rules, one module each; importing this package registers them all."""
from gpulint.rules import (  # noqa: F401  (imported for registration)
    gl001_early_allocation,
    gl002_late_deallocation,
    gl003_redundant_allocation,
    gl004_unused_allocation,
    gl005_memory_leak,
    gl006_temporary_idleness,
    gl007_dead_write,
    gl008_overallocation,
    gl009_non_uniform_access_frequency,
    gl010_structured_access,
    gl101_alloc_in_loop,
    gl102_host_staging,
    gl103_loop_invariant_transfer,
    gl104_pool_fragmentation,
    gl900_unreadable_file,
    gl901_unused_suppression,
)
from gpulint.rules.registry import RULES, Rule, RuleSettings, Source, rule

__all__ = ["RULES", "Rule", "RuleSettings", "Source", "rule"]
