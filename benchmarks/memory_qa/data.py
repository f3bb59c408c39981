"""The memory of `memory_qa`: operations notes about entities, and questions over them.

Everything is generated from a seed, deterministically (`generate_memory`): no download, no
bundled file. The memory is a log of dated notes (incidents INC-2024-089, vulnerabilities
CVE-2024-12345, projects PROJ-456, servers SRV-789) in date order, numbered note-0001, ...;
each question names the notes that hold its evidence.

It is built to be hard the way a real memory is:

- Size: the haystack (`haystack` filler notes, 1,000 by default) makes a memory of well over
  1,000 notes. Filler notes mention the same kinds of entities, the questions' own among them
  (as real logs would), without contradicting any answer; some are word-for-word repeats
  (routine notes are), which retrieval must not count twice.
- Near misses: every question's entity has a twin whose id differs by two swapped digits or
  one digit (PROJ-456 and PROJ-465, SRV-789 and SRV-798, INC-2024-089 and INC-2024-098,
  CVE-2024-12345 and CVE-2024-12354). The twin has notes of the same kind, worded the same
  way, with other values: those values are known wrong answers. Keyword overlap cannot tell
  the twins apart (they share every word but the id's digits); an exact id can.

Categories (question n of each category gets canonical index (n - 1) x 5 + position, so asking
for more questions per category appends tasks):

1. `temporal_evolution`: a value that changes over time (a project's owner, a server's
   region, an incident's severity); the latest note wins, the earlier values and the twin's
   latest are known wrong answers.
2. `security_log_analysis`: SSH auth logs of a server, in two excerpts; which source IP failed
   most and which account it targeted (the runner-up IP, and the twin server's top IP, are
   known wrong answers; only both excerpts together give the right count).
3. `multi_hop`: entity A leads to entity B, which holds the answer (an incident's exploited CVE
   and the version that fixes it; an incident's server and the team that operates it); the
   twin of A leads to a twin of B with another answer.
4. `needle_in_haystack`: one note holds a code, worded unlike the question; near-miss notes
   about other servers use the question's words and give other codes, and the twin server has
   a code of its own (all known wrong answers).
5. `multi_entity`: a question naming two servers; each one's note must be found (each server's
   twin is operated by another team).
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from datetime import date, timedelta

ENTITY_PATTERN = re.compile(r"\b(?:INC-\d{4}-\d{3,}|CVE-\d{4}-\d{4,}|PROJ-\d+|SRV-\d+)\b", re.I)
CATEGORIES: tuple[str, ...] = (
    "temporal_evolution",
    "security_log_analysis",
    "multi_hop",
    "needle_in_haystack",
    "multi_entity",
)
DIFFICULTY: dict[str, float] = {
    "temporal_evolution": 0.3,
    "security_log_analysis": 0.35,
    "multi_hop": 0.45,
    "needle_in_haystack": 0.2,
    "multi_entity": 0.3,
}
NOT_IN_NOTES = "The notes do not say."

_PEOPLE = (
    "Alice Moreau", "Bruno Keller", "Chiara Rossi", "Dmitri Volkov", "Elena Sousa",
    "Farid Haddad", "Grace Okafor", "Hiro Tanaka", "Ines Duarte", "Jonas Berg",
    "Kavya Iyer", "Liam Byrne", "Mei Lin", "Nadia Petrova", "Oscar Lindqvist",
    "Priya Nair", "Quentin Marchal", "Rosa Jimenez", "Samir Aziz", "Tessa Vogel",
)  # fmt: skip
_TEAMS = (
    "Falcon", "Heron", "Otter", "Lynx", "Badger", "Kestrel", "Marten", "Osprey", "Puffin",
    "Wombat",
)  # fmt: skip
_REGIONS = (
    "eu-west-1", "us-east-2", "ap-south-1", "eu-central-1", "us-west-2", "ca-central-1",
    "sa-east-1",
)  # fmt: skip
_SEVERITIES = ("SEV1", "SEV2", "SEV3", "SEV4")
# No "deploy": the logs' accepted logins use it, and a keyword must point at one answer.
_ACCOUNTS = ("root", "oracle", "postgres", "jenkins", "ubuntu", "admin", "backup")
_PRODUCTS = ("authd", "billing-api", "edge-proxy", "ledger-db", "mq-broker")
_CODE_WORDS = (
    "ORCHID", "GRANITE", "TUNDRA", "LANTERN", "MAGPIE", "CITADEL", "JUNIPER", "QUASAR",
    "SAFFRON", "VORTEX", "EMBER", "NIMBUS",
)  # fmt: skip
_IP_PREFIXES = ("203.0.113", "198.51.100", "192.0.2")
_YEAR_START = date(2024, 1, 1)


@dataclass(frozen=True)
class Note:
    """One note of the memory."""

    note_id: str
    day: str  # ISO date
    text: str
    entities: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    """One question, with its answer key and what the simulated solvers are told."""

    question_id: str
    category: str
    number: int  # 1-based within its category
    question: str
    correct_keywords: tuple[str, ...]
    incorrect_patterns: tuple[str, ...]
    evidence: tuple[str, ...]  # note ids
    correct_replies: tuple[str, ...]
    wrong_replies: tuple[str, ...]


@dataclass(frozen=True)
class Memory:
    notes: tuple[Note, ...]
    questions: tuple[Question, ...]  # in canonical order


def extract_entities(text: str) -> tuple[str, ...]:
    """The entity ids a text names, upper-cased, deduplicated, in order of appearance."""
    seen: dict[str, None] = {}
    for match in ENTITY_PATTERN.finditer(text):
        seen.setdefault(match.group(0).upper(), None)
    return tuple(seen)


class _Builder:
    """Draws unique entities and collects notes before they are dated and numbered."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"memory_qa:{seed}")
        self.used: set[str] = set()
        self.drafts: list[tuple[int, str]] = []  # (day of year, text)

    def _unique(self, make: str, low: int, high: int) -> str:
        while True:
            value = make.format(self.rng.randint(low, high))
            if value not in self.used:
                self.used.add(value)
                return value

    def project(self) -> str:
        return self._unique("PROJ-{}", 100, 999)

    def server(self) -> str:
        return self._unique("SRV-{}", 100, 999)

    def incident(self) -> str:
        return self._unique("INC-2024-{:03d}", 1, 999)

    def cve(self) -> str:
        return self._unique("CVE-2024-{}", 10000, 99999)

    def ip(self) -> str:
        prefix = self.rng.choice(_IP_PREFIXES)
        return self._unique(prefix + ".{}", 100, 254)

    def code(self) -> str:
        word = self.rng.choice(_CODE_WORDS)
        return self._unique(word + "-{}", 1000, 9999)

    def twin(self, entity: str) -> str:
        """A near miss of `entity`: the same shape, two digits of its number swapped (or,
        where no swap gives a new id, one digit changed)."""
        head, _, digits = entity.rpartition("-")
        candidates = []
        for position in range(len(digits) - 1):
            swapped = list(digits)
            swapped[position], swapped[position + 1] = swapped[position + 1], swapped[position]
            candidates.append("".join(swapped))
        self.rng.shuffle(candidates)
        changed = []
        for position in range(1, len(digits)):
            for digit in "0123456789":
                changed.append(digits[:position] + digit + digits[position + 1 :])
        self.rng.shuffle(changed)
        for number in (*candidates, *changed):
            value = f"{head}-{number}"
            if number != digits and value not in self.used:
                self.used.add(value)
                return value
        raise AssertionError(f"no near miss left for {entity}")

    def day(self, low: int = 0, high: int = 360) -> int:
        return self.rng.randint(low, high)

    def note(self, day: int, text: str) -> int:
        self.drafts.append((day, text))
        return len(self.drafts) - 1


@dataclass(frozen=True)
class _Draft:
    """A question before its evidence notes have ids."""

    category: str
    number: int
    question: str
    correct_keywords: tuple[str, ...]
    incorrect_patterns: tuple[str, ...]
    evidence: tuple[int, ...]  # draft note positions
    correct_replies: tuple[str, ...]
    wrong_replies: tuple[str, ...]


def _temporal(builder: _Builder, number: int) -> _Draft:
    rng = builder.rng
    first, second, third = sorted(builder.day(0, 340) for _ in range(3))
    second, third = max(second, first + 5), max(third, second + 10)
    kind = (number - 1) % 3
    if kind == 0:
        entity = builder.project()
        old, middle, latest, twin_old, twin_latest = rng.sample(_PEOPLE, 5)
        texts = (
            "{entity} kicked off this week; {old} is the project owner.",
            "Reorg update: ownership of {entity} moved from {old} to {middle}.",
            "{latest} has taken over as owner of {entity}; {middle} now works on another team.",
        )
        question = f"Who is the current owner of {entity}?"
        attribute = "owner"
    elif kind == 1:
        entity = builder.server()
        old, middle, latest, twin_old, twin_latest = rng.sample(_REGIONS, 5)
        texts = (
            "{entity} was provisioned in {old}.",
            "Migration done: {entity} now runs in {middle}.",
            "After the latency review, {entity} was moved again, to {latest}.",
        )
        question = f"In which region does {entity} run now?"
        attribute = "region"
    else:
        entity = builder.incident()
        old, middle, latest = rng.sample(_SEVERITIES, 3)
        twin_old = rng.choice(_SEVERITIES)
        twin_latest = rng.choice([severity for severity in _SEVERITIES if severity != latest])
        texts = (
            "{entity} opened as {old} after alerts on checkout latency.",
            "{entity} escalated to {middle}; customer impact confirmed.",
            "{entity} changed to {latest} once the mitigation held.",
        )
        question = f"What is the latest severity of {entity}?"
        attribute = "severity"
    days = (first, second, third)
    notes = [
        builder.note(day, text.format(entity=entity, old=old, middle=middle, latest=latest))
        for day, text in zip(days, texts, strict=True)
    ]
    # The twin's history, worded the same: its latest value is a near-miss wrong answer.
    twin = builder.twin(entity)
    builder.note(builder.day(0, 200), texts[0].format(entity=twin, old=twin_old))
    builder.note(
        builder.day(200, 360),
        texts[2].format(entity=twin, latest=twin_latest, middle=twin_old),
    )
    return _Draft(
        category="temporal_evolution",
        number=number,
        question=question,
        correct_keywords=(latest,),
        incorrect_patterns=tuple(dict.fromkeys((old, middle, twin_latest))),
        evidence=(notes[2],),
        correct_replies=(
            f"The current {attribute} of {entity} is {latest}.",
            # Mentions the earlier values on the way: correct-first, the latest decides.
            f"It changed from {old} to {middle} and then to {latest}; {latest} is current.",
        ),
        wrong_replies=(
            f"The {attribute} of {entity} is {middle}.",
            f"The {attribute} of {entity} is {old}.",
            # The twin's value: a reader that confused the two ids.
            f"The {attribute} of {entity} is {twin_latest}.",
        ),
    )


def _auth_log(
    builder: _Builder, server: str, day: int, first_hour: int, parts: list[list[tuple[str, str]]]
) -> list[int]:
    rng = builder.rng
    notes = []
    for part, failures in enumerate(parts, 1):
        lines = [f"Auth log excerpt from {server} (part {part} of {len(parts)}):"]
        hour = first_hour + part - 1
        for position, (ip, account) in enumerate(failures):
            port = rng.randint(30000, 65000)
            lines.append(
                f"{hour:02d}:{position * 3 + part:02d}:{rng.randint(0, 59):02d} {server} "
                f"sshd[{rng.randint(1000, 9999)}]: Failed password for {account} from {ip} "
                f"port {port} ssh2"
            )
        lines.append(
            f"{hour:02d}:59:00 {server} sshd[{rng.randint(1000, 9999)}]: Accepted publickey "
            f"for deploy from 10.0.{rng.randint(1, 9)}.{rng.randint(10, 99)}"
        )
        notes.append(builder.note(day, "\n".join(lines)))
    return notes


def _security(builder: _Builder, number: int) -> _Draft:
    rng = builder.rng
    server = builder.server()
    top, runner_up, *others = (builder.ip() for _ in range(4))
    top_account, runner_up_account, *other_accounts = rng.sample(_ACCOUNTS, 4)
    # Part 1 alone shows a tie (3 and 3); only both parts give the top IP its 5 failures.
    part_one = [(top, top_account)] * 3 + [(runner_up, runner_up_account)] * 3
    part_one += [(others[0], other_accounts[0])]
    part_two = [(top, top_account)] * 2 + [(others[1], other_accounts[1])]
    rng.shuffle(part_one)
    rng.shuffle(part_two)
    day = builder.day(20, 340)
    notes = _auth_log(builder, server, day, rng.randint(0, 20), [part_one, part_two])
    # The twin server's log has another top IP (and account): a near-miss wrong answer.
    twin_top, twin_other = builder.ip(), builder.ip()
    twin_account = rng.choice([account for account in _ACCOUNTS if account != top_account])
    twin_part = [(twin_top, twin_account)] * 6 + [(twin_other, top_account)] * 2
    rng.shuffle(twin_part)
    _auth_log(builder, builder.twin(server), builder.day(20, 340), rng.randint(0, 20), [twin_part])
    return _Draft(
        category="security_log_analysis",
        number=number,
        question=(
            f"In the SSH auth logs of {server}, which source IP made the most failed login "
            "attempts, and which account did it target?"
        ),
        correct_keywords=(top, top_account),
        incorrect_patterns=(runner_up, twin_top),
        evidence=tuple(notes),
        correct_replies=(
            f"{top} made the most failed attempts (5), all against the {top_account} account.",
        ),
        wrong_replies=(
            f"{runner_up} made the most failed attempts, against the {runner_up_account} account.",
            f"{twin_top} made the most failed attempts, against the {twin_account} account.",
            # Half right: the rubric decides it fails (one correct keyword of two).
            f"The most failed attempts came from {top}.",
        ),
    )


def _multi_hop(builder: _Builder, number: int) -> _Draft:
    rng = builder.rng
    incident, server = builder.incident(), builder.server()
    twin_incident = builder.twin(incident)
    first, second = sorted(builder.day(0, 340) for _ in range(2))
    if (number - 1) % 2 == 0:
        cve, product = builder.cve(), rng.choice(_PRODUCTS)
        twin_cve = builder.twin(cve)
        major, minor, patch = rng.randint(1, 9), rng.randint(0, 20), rng.randint(0, 8)
        vulnerable, fixed = f"{major}.{minor}.{patch}", f"{major}.{minor}.{patch + 1}"
        twin_fixed = f"{major}.{minor + 1}.0"
        # The advisory comes first: the fix existed before the incident, unapplied.
        advisory = builder.note(
            first,
            f"Advisory {cve}: fixed in {product} {fixed}; releases up to {vulnerable} "
            "are vulnerable.",
        )
        postmortem = builder.note(
            second,
            f"{incident} postmortem: the attackers got in through {cve} in {product} on {server}.",
        )
        # The twin incident went through the twin CVE, fixed in another release.
        builder.note(
            builder.day(0, 340),
            f"Advisory {twin_cve}: fixed in {product} {twin_fixed}; earlier releases are "
            "vulnerable.",
        )
        builder.note(
            builder.day(0, 360),
            f"{twin_incident} postmortem: the attackers got in through {twin_cve} in {product}.",
        )
        return _Draft(
            category="multi_hop",
            number=number,
            question=f"Which {product} version fixes the vulnerability exploited in {incident}?",
            correct_keywords=(fixed,),
            incorrect_patterns=(vulnerable, twin_fixed),
            evidence=(postmortem, advisory),
            correct_replies=(f"{incident} exploited {cve}, which {product} {fixed} fixes.",),
            wrong_replies=(
                f"Version {vulnerable} fixes it.",
                f"Version {twin_fixed} fixes it.",
                NOT_IN_NOTES,
            ),
        )
    team, other_team, twin_team = rng.sample(_TEAMS, 3)
    twin_server = builder.twin(server)
    registry = builder.note(first, f"Ownership registry: the {team} team operates {server}.")
    outage = builder.note(
        second, f"{incident}: the outage started on {server} when its disk filled up."
    )
    builder.note(
        builder.day(0, 360),
        f"The {other_team} team asked for read access to the {server} dashboards.",
    )
    builder.note(
        builder.day(0, 360), f"Ownership registry: the {twin_team} team operates {twin_server}."
    )
    builder.note(
        builder.day(0, 360),
        f"{twin_incident}: the outage started on {twin_server} when its disk filled up.",
    )
    return _Draft(
        category="multi_hop",
        number=number,
        question=f"Which team operates the server where {incident} started?",
        correct_keywords=(team,),
        incorrect_patterns=(other_team, twin_team),
        evidence=(outage, registry),
        correct_replies=(f"{incident} started on {server}, which the {team} team operates.",),
        wrong_replies=(
            f"The {other_team} team operates it.",
            f"The {twin_team} team operates it.",
            NOT_IN_NOTES,
        ),
    )


def _needle(builder: _Builder, number: int) -> _Draft:
    server, code = builder.server(), builder.code()
    needle = builder.note(
        builder.day(),
        f"{server} change window: the break-glass token for Friday's maintenance is {code}.",
    )
    twin_code = builder.code()
    builder.note(
        builder.day(),
        f"{builder.twin(server)} change window: the break-glass token for Friday's maintenance "
        f"is {twin_code}.",
    )
    decoys = []
    # Near misses that share the question's words (but not its server) and outrank the needle
    # on keyword overlap.
    for _ in range(3):
        decoy_code = builder.code()
        decoys.append(decoy_code)
        builder.note(
            builder.day(),
            f"Reminder: the emergency access code issued for {builder.server()} is kept in the "
            f"vault; the code issued last month was {decoy_code}.",
        )
    return _Draft(
        category="needle_in_haystack",
        number=number,
        question=f"What emergency access code was issued for {server}?",
        correct_keywords=(code,),
        incorrect_patterns=(*decoys, twin_code),
        evidence=(needle,),
        correct_replies=(f"The emergency access code for {server} is {code}.",),
        wrong_replies=(f"The code is {decoys[0]}.", f"The code is {twin_code}.", NOT_IN_NOTES),
    )


def _multi_entity(builder: _Builder, number: int) -> _Draft:
    first, second = builder.server(), builder.server()
    first_team, second_team, first_twin_team, second_twin_team = builder.rng.sample(_TEAMS, 4)
    notes = (
        builder.note(builder.day(), f"Handover: {first} is now operated by the {first_team} team."),
        builder.note(builder.day(), f"{second} joined the {second_team} team's fleet last sprint."),
    )
    builder.note(
        builder.day(),
        f"Handover: {builder.twin(first)} is now operated by the {first_twin_team} team.",
    )
    builder.note(
        builder.day(),
        f"{builder.twin(second)} joined the {second_twin_team} team's fleet last sprint.",
    )
    return _Draft(
        category="multi_entity",
        number=number,
        question=f"Which teams operate {first} and {second}?",
        correct_keywords=(first_team, second_team),
        incorrect_patterns=(first_twin_team, second_twin_team),
        evidence=notes,
        correct_replies=(f"{first} is operated by {first_team} and {second} by {second_team}.",),
        wrong_replies=(
            # Half right: one correct keyword of two, so the rubric fails it.
            f"{first} is operated by {first_team}; the notes do not say for {second}.",
            f"{first} is operated by {first_twin_team} and {second} by {second_twin_team}.",
            NOT_IN_NOTES,
        ),
    )


_MAKERS = {
    "temporal_evolution": _temporal,
    "security_log_analysis": _security,
    "multi_hop": _multi_hop,
    "needle_in_haystack": _needle,
    "multi_entity": _multi_entity,
}


def _filler(builder: _Builder, question_entities: list[str]) -> None:
    rng = builder.rng

    def pick(kind: str) -> str:
        # Now and then the haystack mentions a question's own entity (or its twin), as real
        # logs would, so entity-linked retrieval also brings back notes that answer nothing.
        own = [entity for entity in question_entities if entity.startswith(kind)]
        if own and rng.random() < 0.15:
            return rng.choice(own)
        return {
            "PROJ": builder.project,
            "SRV": builder.server,
            "INC": builder.incident,
            "CVE": builder.cve,
        }[kind]()

    templates = (
        lambda: f"Weekly sync: the {pick('PROJ')} demo moved to Thursday.",
        lambda: f"{pick('SRV')} disk usage at {rng.randint(55, 95)}%; cleanup scheduled.",
        lambda: f"{pick('INC')} closed after the DNS fix was verified.",
        lambda: f"{pick('CVE')} triaged as not applicable to {pick('PROJ')}.",
        lambda: f"Capacity review: {pick('SRV')} and {pick('SRV')} keep their instance size.",
        lambda: f"{pick('PROJ')} sprint review notes shared with the stakeholders.",
        lambda: f"On-call handover: nothing new on {pick('SRV')}.",
        lambda: f"Access review for {pick('SRV')} done; two stale keys removed.",
        lambda: f"{pick('SRV')} kernel patched during the {rng.choice(_TEAMS)} team's window.",
        lambda: f"{pick('INC')} linked to a noisy alert on {pick('SRV')}; alert tuned.",
        lambda: f"Budget check for {pick('PROJ')}: on track for the quarter.",
        lambda: f"Scanner flagged {pick('CVE')} on {pick('SRV')}; a false positive.",
    )
    builder.note(builder.day(), rng.choice(templates)())


@functools.lru_cache(maxsize=16)
def generate_memory(seed: int, questions_per_category: int, haystack: int) -> Memory:
    """The memory and questions of one seed (cached: the result is immutable)."""
    builder = _Builder(seed)
    drafts = [
        _MAKERS[category](builder, number)
        for number in range(1, questions_per_category + 1)
        for category in CATEGORIES
    ]
    # The questions' entities and the near misses made for them (every id used so far).
    question_entities = sorted(
        {entity for _, text in builder.drafts for entity in extract_entities(text)}
    )
    for _ in range(haystack):
        _filler(builder, question_entities)
    # The memory is a log: notes in date order (drafts of one day keep their order).
    order = sorted(range(len(builder.drafts)), key=lambda position: builder.drafts[position][0])
    ids: dict[int, str] = {}
    notes: list[Note] = []
    for number, position in enumerate(order, 1):
        day, text = builder.drafts[position]
        note_id = f"note-{number:04d}"
        ids[position] = note_id
        notes.append(
            Note(
                note_id=note_id,
                day=(_YEAR_START + timedelta(days=day)).isoformat(),
                text=text,
                entities=extract_entities(text),
            )
        )
    questions = tuple(
        Question(
            question_id=f"{draft.category}-{draft.number}",
            category=draft.category,
            number=draft.number,
            question=draft.question,
            correct_keywords=draft.correct_keywords,
            incorrect_patterns=draft.incorrect_patterns,
            evidence=tuple(ids[position] for position in draft.evidence),
            correct_replies=draft.correct_replies,
            wrong_replies=draft.wrong_replies,
        )
        for draft in drafts
    )
    return Memory(notes=tuple(notes), questions=questions)
