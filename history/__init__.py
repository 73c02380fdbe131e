"""The ground floor: what every part of splitbrain stands on and nothing that
judges. The error tree (`errors`), the history's tables (`schema`), the
fault catalogue (`faults`), a nemesis operation (`operations`), what a
strategy observes (`observation`) and the coverage cells' words
(`coverage`), the kinds of peer message (`messages`) and the geometry of a
cut (`cuts`). It imports the standard library, pandas, numpy and pyarrow
alone."""
