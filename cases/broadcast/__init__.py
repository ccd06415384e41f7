"""Broadcasting (notes 002 "broadcast", 004 "广播"): its rules (`rules`) and the outer products built
on them (`outer`: 004's AlphaFold MSA → pair representation)."""
