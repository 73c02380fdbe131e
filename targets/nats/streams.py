"""The names the workloads use, shared by the client, the status and the log
parser: the append workload's stream and subject, the register's bucket
(whose stream NATS names KV_<bucket>)."""

STREAM, SUBJECT, BUCKET = "LOG", "log", "reg"
WORKLOAD_STREAMS = (STREAM, f"KV_{BUCKET}")
