"""The fleet dashboard (inferwatch-fleet): every host side by side, from the recording rules
Prometheus evaluates (deploy/prometheus/fleet-rules.yml and the shipped rules' exported
recording rules), each by its ``prom:`` name."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard
from panels import datasource_variable, graph, grid, label_variable

H = 'host=~"$host"'


def fleet_dashboard() -> dashboard.Dashboard:
    d = (
        dashboard.Dashboard("inferwatch: fleet")
        .uid("inferwatch-fleet")
        .description(
            "Every inferwatch host side by side: agents up, alerts, GPUs, engine "
            "speed and faults, from Prometheus's recording rules."
        )
        .tags(["inferwatch"])
        .refresh("1m")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(datasource_variable())
        .with_variable(
            label_variable(
                "host", "Host", "label_values(prom:inferwatch_host:up, host)", multi=True
            )
        )
    )
    d.with_row(dashboard.Row("Hosts"))
    d.with_panel(
        grid(
            "Hosts",
            "Per host: agent reachable (1), GPUs up and expected, GPUs missing, alerts "
            "firing by severity, sources down.",
            [
                (f"prom:inferwatch_host:up{{{H}}}", ""),
                (f"prom:inferwatch_host:gpus_up{{{H}}}", ""),
                (f"prom:inferwatch_host:gpus_expected{{{H}}}", ""),
                (f"prom:inferwatch_host:gpus_missing{{{H}}}", ""),
                (f"prom:inferwatch_host:alerts_firing{{{H}}}", ""),
                (f"prom:inferwatch_host:sources_down{{{H}}}", ""),
            ],
            w=24,
        )
    )
    d.with_panel(
        graph(
            "Alerts firing",
            "Alerts each host's daemon has firing, by severity.",
            [(f"prom:inferwatch_host:alerts_firing{{{H}}}", "{{host}} {{severity}}")],
        )
    )
    d.with_panel(
        graph(
            "GPUs missing",
            "GPUs expected (gpus.expected) but not answering, per host.",
            [(f"prom:inferwatch_host:gpus_missing{{{H}}}", "{{host}}")],
        )
    )
    d.with_panel(
        graph(
            "Sources down",
            "inferwatch sources not up, per host.",
            [(f"prom:inferwatch_host:sources_down{{{H}}}", "{{host}}")],
        )
    )

    d.with_row(dashboard.Row("Engines"))
    d.with_panel(
        graph(
            "Decode",
            "Decode tokens/s per host and engine, and its decode-bound windows (the "
            "baseline of EngineDecodeCollapse).",
            [
                (
                    f"prom:inferwatch_host_engine:decode_tokens_per_second{{{H}}}",
                    "{{host}} {{engine}}",
                ),
                (
                    f"prom:inferwatch_engine:decode_tokens_per_second:decode_bound{{{H}}}",
                    "{{host}} {{engine}} decode-bound",
                ),
            ],
            "none",
        )
    )
    d.with_panel(
        graph(
            "Decode / anchor",
            "Decode speed over engines[].decode_anchor: below 1 is slower than "
            "the host's own anchor.",
            [(f"prom:inferwatch_host_engine:decode_anchor_ratio{{{H}}}", "{{host}} {{engine}}")],
            "percentunit",
        )
    )
    d.with_panel(
        graph(
            "Step rate",
            "Forward steps per second per host and engine, and on single streams.",
            [
                (f"prom:inferwatch_host_engine:steps_per_second{{{H}}}", "{{host}} {{engine}}"),
                (
                    f"prom:inferwatch_engine:steps_per_second:single_stream{{{H}}}",
                    "{{host}} {{engine}} single stream",
                ),
            ],
        )
    )
    d.with_panel(
        graph(
            "Mean acceptance length",
            "MAL per host and engine.",
            [(f"prom:inferwatch_host_engine:spec_acceptance_length{{{H}}}", "{{host}} {{engine}}")],
        )
    )
    d.with_panel(
        graph(
            "Requests",
            "Running and waiting requests per host and engine.",
            [
                (
                    f"prom:inferwatch_host_engine:requests_running{{{H}}}",
                    "{{host}} {{engine}} running",
                ),
                (
                    f"prom:inferwatch_host_engine:requests_waiting{{{H}}}",
                    "{{host}} {{engine}} waiting",
                ),
            ],
            w=16,
        )
    )

    d.with_row(dashboard.Row("GPUs and faults"))
    d.with_panel(
        graph(
            "Hottest GPU",
            "The highest GPU temperature per host.",
            [(f"prom:inferwatch_host:gpu_temperature_celsius:max{{{H}}}", "{{host}}")],
            "celsius",
        )
    )
    d.with_panel(
        graph(
            "GPU power",
            "Power drawn by all GPUs of each host.",
            [(f"prom:inferwatch_host:gpu_power_watts:sum{{{H}}}", "{{host}}")],
            "watt",
        )
    )
    d.with_panel(
        graph(
            "VRAM held by dead processes",
            "Per host.",
            [(f"prom:inferwatch_host:gpu_orphaned_memory_bytes:sum{{{H}}}", "{{host}}")],
            "bytes",
        )
    )
    d.with_panel(
        graph(
            "Xid errors",
            "Xid errors per second over 5 minutes, per host and Xid.",
            [(f"prom:inferwatch_host_xid:errors:rate5m{{{H}}}", "{{host}} Xid {{xid}}")],
            w=12,
        )
    )
    d.with_panel(
        graph(
            "Fault incidents",
            "Incidents over the last hour, per host and classification.",
            [
                (
                    f"prom:inferwatch_host:fault_incidents:increase1h{{{H}}}",
                    "{{host}} {{classification}}",
                )
            ],
            w=12,
        )
    )
    return d
