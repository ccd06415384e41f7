"""The results contract: what a results file records and how a verdict is read from it.

The typed, versioned records of a results file (`record`, the claim vocabulary they carry in
`claims`), how each travels as JSON (`codec`: one walk over its fields, each field's reader from
`values`), the verdict rules as data and the pairs each compares (`rules`), when a gain is real
(`gain`: the band ±δ, paired-round ratios), the one rounds policy (`rounds`: pilot, plan, cap, the
spread flag), the catalogue (`catalogue`, reading `cases/CATALOG.md`) and a case's declaration as
the results record it (`declared`).

Imports neither torch nor pytest: the only part of the harness that `reports/` reads.
"""
