"""Every error splitbrain raises for its user to read, as one tree, so the
command line catches one root and nothing takes a message apart again
(httpx's `_exceptions.py` is the model). It sits below everything, beside
the history schema, since every layer raises these.

    SplitbrainError             the root
    ├── UsageError              the user's input is wrong: one line, exit 2
    │   ├── SettingError        a run setting: `setting` as the run config names
    │   │                       it, and `reason`; the command line shows the
    │   │                       setting as its flag (--time-limit), a campaign
    │   │                       file as its key
    │   ├── HistoryError        a run directory or history file, or a history
    │   │                       that no model takes (results/recording.py, checkers/)
    │   ├── PolicyError         a gate policy (results/gate.py)
    │   ├── ArchiveError        an archive (results/archive.py)
    │   ├── ImportFormatError   another tool's history (results/jepsen_formats.py)
    │   ├── ExportError         a run that cannot be exported (results/exporter.py)
    │   ├── CampaignError       a campaign file (harness/campaign.py)
    │   ├── HostsFileError      an SSH hosts file (harness/ssh_hosts.py)
    │   ├── ShrinkError         a run that cannot be shrunk (harness/shrinking.py)
    │   ├── ClusterStateError   a manual cluster's state folder (harness/manual_cluster.py)
    │   ├── SparkCampaignError  a run a Spark campaign could not run (harness/spark_campaign.py)
    │   └── ReleaseError        a release or a build of the user's that cannot be had here
    │                           (targets/releases.py)
    ├── ClusterError            a backend could not make, reach or heal its nodes:
    │   │                       a node that exited as it started, no agreed leader,
    │   │                       copies that did not converge or could not be read,
    │   │                       no free port, no link proxy, no node image
    │   ├── NoAgreedLeader      every node running, and no leader they agree on
    │   │                       (a run that starts so judges it: checkers/progress.py)
    │   ├── Unsettled           a healed cluster whose copies did not meet (a run that
    │   │                       ends so judges it where the target declares `recovers`)
    │   └── SshError            an SSH host (harness/ssh_cluster.py)
    ├── TargetError             a target's client met an answer it must turn into
    │   │                       a completion (never past the target's own module)
    │   ├── GatewayError        etcd answered with an error (targets/etcd/gateway.py)
    │   ├── NotSent             a request that never left: also a ConnectionError
    │   ├── ConnectionLost      a node's connection closed or broke under a request:
    │   │                       also a ConnectionError (the operation is indeterminate)
    │   └── ConnectionRefused   a node took no connection: also a ConnectionRefusedError
    └── Defect                  splitbrain broke a rule of its own (a checker that
                                answered "ture", an operation no nemesis knows):
                                a bug of ours, reported with its traceback

A checker never raises for a history it cannot judge: it answers `unknown`
with the reason (checkers/result.py). An exception outside this tree is a
bug of ours, as a Defect is: the command line keeps its traceback and says
so. The programs that run on the nodes (the reference quorum's node:
targets/kraft's core, storage, messages and server; our Toxiproxy server,
harness/toxiproxy/) keep errors of their own: they run with the standard
library alone (an SSH host gets targets/ and nothing else), and what
reaches splitbrain of them is their answers.
"""

from __future__ import annotations


class SplitbrainError(Exception):
    """The root of every error splitbrain raises for its user."""


class UsageError(SplitbrainError):
    """A bad option, setting or input file: reported in one line, exit 2."""


class SettingError(UsageError):
    """A run setting that cannot be used: which one (as the run config, and
    a campaign file, name it) and why, kept apart so that each front end
    names the setting its own way."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"{setting}: {reason}")
        self.setting = setting
        self.reason = reason


class HistoryError(UsageError):
    """A run directory file that cannot be read, or a history no checker can
    take; the message names the file and row, or what is wrong."""


class ClusterError(SplitbrainError):
    """A backend could not make, reach or heal its nodes."""


class NoAgreedLeader(ClusterError):
    """The running nodes agreed on no leader in the time given: an error
    where a cluster is made to be used, the system's own unavailability
    where a run starts (it judges it, checkers/progress.py)."""


class Unsettled(ClusterError):
    """A healed cluster whose copies did not meet in the time given;
    `met_below`: they met, but below what the cluster had committed before
    (a target that declares `recovers` must come back to that), so each
    copy is whole to where they met and can be read."""

    def __init__(self, message: str, met_below: bool = False) -> None:
        super().__init__(message)
        self.met_below = met_below


class TargetError(SplitbrainError):
    """What a target's client met and turns into a completion (an error
    answer, a request never sent); never raised past the target's module."""


class Defect(SplitbrainError):
    """A rule of splitbrain's own broken: a bug of ours, never the user's
    input, so the command line reports it as an internal error."""


class ConnectionLost(TargetError, ConnectionError):
    """A node's connection closed or broke under a request: the harness,
    which catches OSError, records the operation indeterminate."""


class ConnectionRefused(TargetError, ConnectionRefusedError):
    """A node took no connection (a target's `connect`): the operation was never sent."""
