"""Irregular English verbs: the past forms of a verb a query names in its base form.

A question asks in the base form ("when did we choose", "where did she go", "what did
he buy"); the memory that answers it was written in the past ("Chose Elasticsearch",
"I went camping", "bought a car"). The FTS table's porter stemmer maps regular forms
onto one stem ("deployed", "deploys" -> "deploy") but not these: "choose" is "choos",
"chose" stays "chose". So a key term that is the base form of an irregular verb is
looked up with its past forms too (recall/search.py), as one term: one IDF, one share
of the key terms. Only base -> past: a query word in the past tense already matches
the memories in the past tense, and many past forms are other words too ("left",
"found", "saw"). General English, nothing about any data set.
"""

from __future__ import annotations

import functools

# base: past forms (simple past, past participle). Forms that are mostly other words
# are left out: lie/lay (lay is also a verb), wind/wound, grind/ground, bear/born.
_TABLE = """
arise arose arisen|awake awoke awoken|beat beaten|become became|begin began begun
bend bent|bite bit bitten|bleed bled|blow blew blown|break broke broken|breed bred
bring brought|build built|burn burnt|buy bought|catch caught|choose chose chosen
cling clung|come came|creep crept|deal dealt|dig dug|draw drew drawn|dream dreamt
drink drank drunk|drive drove driven|eat ate eaten|fall fell fallen|feed fed|feel felt
fight fought|find found|flee fled|fly flew flown|forbid forbade forbidden
forget forgot forgotten|forgive forgave forgiven|freeze froze frozen|give gave given
go went gone|grow grew grown|hang hung|hear heard|hide hid hidden|hold held|keep kept
kneel knelt|know knew known|lead led|leap leapt|learn learnt|leave left|lend lent
light lit|lose lost|make made|mean meant|meet met|pay paid|ride rode ridden|ring rang rung
rise rose risen|run ran|say said|see saw seen|seek sought|sell sold|send sent
shake shook shaken|shine shone|shoot shot|shrink shrank shrunk|sing sang sung
sink sank sunk|sit sat|sleep slept|slide slid|speak spoke spoken|spend spent|spin spun
stand stood|steal stole stolen|stick stuck|sting stung|strike struck|swear swore sworn
sweep swept|swim swam swum|swing swung|take took taken|teach taught|tear tore torn
tell told|think thought|throw threw thrown|understand understood|wake woke woken
wear wore worn|weep wept|win won|write wrote written
"""


@functools.cache
def _past_forms() -> dict[str, tuple[str, ...]]:
    forms: dict[str, tuple[str, ...]] = {}
    for entry in _TABLE.replace("\n", "|").split("|"):
        words = entry.split()
        if words:
            forms[words[0]] = tuple(words[1:])
    return forms


def past_forms(term: str) -> tuple[str, ...]:
    """The past forms of ``term`` if it is a present form of an irregular verb (``go``,
    ``goes``, ``going``), else (). The base form comes first when ``term`` is not it:
    the stemmer does not map every present form onto it ("goes" is "goe")."""
    table = _past_forms()
    for base in _bases(term):
        if base in table:
            return table[base] if base == term else (base, *table[base])
    return ()


def _bases(term: str) -> tuple[str, ...]:
    """What ``term`` may be the present form of: itself, without -s / -es, without
    -ing (with a final e restored, or a doubled consonant undone: making, swimming)."""
    found = [term]
    if term.endswith("es"):
        found.append(term[:-2])
    if term.endswith("s"):
        found.append(term[:-1])
    if term.endswith("ing") and len(term) >= 5:
        stem = term[:-3]
        found += [stem, stem + "e"]
        if len(stem) > 2 and stem[-1] == stem[-2]:
            found.append(stem[:-1])
    return tuple(found)
