"""The host dashboard (inferwatch-host): one GPU host as its inferwatch exports it, read from
Prometheus, where every series carries the scrape target's ``host`` label."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard
from panels import (
    datasource_variable,
    graph,
    grid,
    label_variable,
    single,
    xid_annotation,
)

H = 'host="$host"'
E = 'host="$host", engine=~"$engine"'
G = 'host="$host", gpu=~"$gpu"'
RATE = "$__rate_interval"
XID = f"inferwatch_xid_errors_total{{{H}}}"


def engine_row(d: dashboard.Dashboard) -> None:
    d.with_row(dashboard.Row("Engine"))
    d.with_panel(
        graph(
            "Decode vs anchor",
            "Decode speed (tokens/s) against engines[].decode_anchor: below the anchor on a single "
            "stream of ordinary text, EngineDecodeBelowAnchor pages.",
            [
                (f"inferwatch_engine_decode_tokens_per_second{{{E}}}", "{{engine}} decode"),
                (f"inferwatch_engine_decode_anchor_tokens_per_second{{{E}}}", "{{engine}} anchor"),
            ],
            "none",
        )
    )
    d.with_panel(
        graph(
            "Prefill and generated tokens",
            "Prompt processing speed, and tokens generated per second from the engine's counter.",
            [
                (f"inferwatch_engine_prefill_tokens_per_second{{{E}}}", "{{engine}} prefill"),
                (
                    f"rate(inferwatch_engine_generated_tokens_total{{{E}}}[{RATE}])",
                    "{{engine}} generated",
                ),
            ],
            "none",
        )
    )
    d.with_panel(
        graph(
            "Mean acceptance length (MAL)",
            "Tokens accepted per speculative step; the anchor applies above anchor_min_mal.",
            [
                (f"inferwatch_engine_spec_acceptance_length{{{E}}}", "{{engine}} MAL"),
                (f"inferwatch_engine_anchor_min_mal{{{E}}}", "{{engine}} anchor_min_mal"),
            ],
        )
    )
    d.with_panel(
        graph(
            "Step rate",
            "Forward steps per second: the stack's own speed, independent of the content.",
            [(f"inferwatch_engine_steps_per_second{{{E}}}", "{{engine}} steps/s")],
        )
    )
    d.with_panel(
        graph(
            "Running and waiting requests",
            "Requests the engine runs and queues.",
            [
                (f"inferwatch_engine_requests_running{{{E}}}", "{{engine}} running"),
                (f"inferwatch_engine_requests_waiting{{{E}}}", "{{engine}} waiting"),
            ],
        )
    )
    d.with_panel(
        graph(
            "KV cache",
            "KV cache usage and prefix cache hit ratio.",
            [
                (f"inferwatch_engine_kv_cache_usage_ratio{{{E}}}", "{{engine}} KV usage"),
                (f"inferwatch_engine_prefix_cache_hit_ratio{{{E}}}", "{{engine}} prefix hits"),
            ],
            "percentunit",
        )
    )
    d.with_panel(
        graph(
            "Draft acceptance",
            "Speculative decoding: the share of drafted tokens accepted, overall and by position.",
            [
                (f"inferwatch_engine_spec_draft_acceptance_ratio{{{E}}}", "{{engine}} all"),
                (
                    f"inferwatch_engine_spec_position_acceptance_ratio{{{E}}}",
                    "{{engine}} position {{position}}",
                ),
            ],
            "percentunit",
        )
    )
    d.with_panel(
        graph(
            "Canary TTFT",
            "The known-answer canary request (engines[].canary): time to first token and decode.",
            [(f"inferwatch_canary_ttft_seconds{{{E}}}", "{{engine}} TTFT")],
            "s",
        )
    )
    d.with_panel(
        graph(
            "Canary result",
            "1 when the canary's answer was right, 0 when it was not.",
            [
                (f"inferwatch_canary_success{{{E}}}", "{{engine}} success"),
                (f"inferwatch_canary_decode_tokens_per_second{{{E}}}", "{{engine}} decode t/s"),
            ],
        )
    )
    d.with_panel(
        graph(
            "Engine stats age",
            "Seconds since the engine's last stats line, and when EngineStatsStale calls it stale.",
            [
                (
                    f"time() - inferwatch_engine_last_stats_timestamp_seconds{{{E}}}",
                    "{{engine}} age",
                ),
                (f"inferwatch_engine_stats_stale_after_seconds{{{E}}}", "{{engine}} stale after"),
            ],
            "s",
            w=12,
        )
    )
    d.with_panel(
        grid(
            "Engine thresholds (from config)",
            "The ratios the shipped rules compare with: decode collapse, step-rate regression.",
            [
                (f"inferwatch_engine_decode_collapse_ratio{{{E}}}", ""),
                (f"inferwatch_engine_step_rate_regression_ratio{{{E}}}", ""),
            ],
        )
    )


def gpu_row(d: dashboard.Dashboard) -> None:
    d.with_row(dashboard.Row("GPUs"))
    d.with_panel(
        single(
            "GPUs up / expected",
            "GPUs NVML answers for, against gpus.expected.",
            [
                (f"sum(inferwatch_gpu_up{{{H}}})", "up"),
                (f"inferwatch_gpus_expected{{{H}}}", "expected"),
            ],
            w=6,
            h=8,
        )
    )
    d.with_panel(
        graph(
            "SM clock vs expected lock",
            "The SM clock against gpus.devices[].sm_clock_lock_mhz and its lower tolerance.",
            [
                (f'inferwatch_gpu_clock_hertz{{{G}, clock="sm"}}', "GPU{{gpu}} SM"),
                (f"inferwatch_gpu_expected_sm_clock_hertz{{{G}}}", "GPU{{gpu}} expected"),
                (
                    f"inferwatch_gpu_expected_sm_clock_hertz{{{G}}} - "
                    f"inferwatch_gpu_expected_sm_clock_tolerance_hertz{{{G}}}",
                    "GPU{{gpu}} lowest allowed",
                ),
            ],
            "hertz",
            w=9,
        )
    )
    d.with_panel(
        graph(
            "Clock offsets vs expected",
            "VF clock offsets NVML reports against gpus.devices[].clock_offset_mhz: a lost offset "
            "(driver reload without the tuning unit) pages as GpuClockOffsetLost.",
            [
                (f"inferwatch_gpu_clock_offset_hertz{{{G}}}", "GPU{{gpu}} {{domain}}"),
                (
                    f"inferwatch_gpu_expected_clock_offset_hertz{{{G}}}",
                    "GPU{{gpu}} {{domain}} expected",
                ),
            ],
            "hertz",
            w=9,
        )
    )
    d.with_panel(
        graph(
            "Clocks",
            "Every clock domain, its maximum and the application clock.",
            [
                (f"inferwatch_gpu_clock_hertz{{{G}}}", "GPU{{gpu}} {{clock}}"),
                (f"inferwatch_gpu_clock_max_hertz{{{G}}}", "GPU{{gpu}} {{clock}} max"),
                (
                    f"inferwatch_gpu_clock_application_hertz{{{G}}}",
                    "GPU{{gpu}} {{clock}} application",
                ),
            ],
            "hertz",
        )
    )
    d.with_panel(
        graph(
            "Throttle reasons",
            "Active clock event reasons (1 while active) and the performance state.",
            [
                (f"inferwatch_gpu_throttle_reason{{{G}}} > 0", "GPU{{gpu}} {{reason}}"),
                (f"inferwatch_gpu_performance_state{{{G}}}", "GPU{{gpu}} P-state"),
            ],
        )
    )
    d.with_panel(
        graph(
            "Temperature",
            "GPU and memory temperatures.",
            [(f"inferwatch_gpu_temperature_celsius{{{G}}}", "GPU{{gpu}} {{sensor}}")],
            "celsius",
        )
    )
    d.with_panel(
        graph(
            "Power",
            "Power draw against the limit, the enforced one and devices[].power_limit_watts; "
            "the energy counter's rate.",
            [
                (f"inferwatch_gpu_power_watts{{{G}}}", "GPU{{gpu}} draw"),
                (f"inferwatch_gpu_power_limit_watts{{{G}}}", "GPU{{gpu}} limit"),
                (f"inferwatch_gpu_power_enforced_limit_watts{{{G}}}", "GPU{{gpu}} enforced"),
                (f"inferwatch_gpu_expected_power_limit_watts{{{G}}}", "GPU{{gpu}} expected limit"),
                (
                    f"rate(inferwatch_gpu_energy_joules_total{{{G}}}[{RATE}])",
                    "GPU{{gpu}} energy rate",
                ),
            ],
            "watt",
        )
    )
    d.with_panel(
        graph(
            "Utilization",
            "Busy share of the SMs and of the memory interface.",
            [
                (f"inferwatch_gpu_utilization_ratio{{{G}}}", "GPU{{gpu}} SM"),
                (f"inferwatch_gpu_memory_utilization_ratio{{{G}}}", "GPU{{gpu}} memory"),
            ],
            "percentunit",
        )
    )
    d.with_panel(
        graph(
            "PCIe link vs max and expected",
            "Link generation and width now, the maximum the card and slot allow, and "
            "gpus.devices[].pcie_generation / pcie_width.",
            [
                (f"inferwatch_gpu_pcie_link_generation{{{G}}}", "GPU{{gpu}} gen"),
                (f"inferwatch_gpu_pcie_link_generation_max{{{G}}}", "GPU{{gpu}} gen max"),
                (f"inferwatch_gpu_expected_pcie_link_generation{{{G}}}", "GPU{{gpu}} gen expected"),
                (f"inferwatch_gpu_pcie_link_width{{{G}}}", "GPU{{gpu}} width"),
                (f"inferwatch_gpu_pcie_link_width_max{{{G}}}", "GPU{{gpu}} width max"),
                (f"inferwatch_gpu_expected_pcie_link_width{{{G}}}", "GPU{{gpu}} width expected"),
            ],
        )
    )
    d.with_panel(
        graph(
            "PCIe traffic and replays",
            "Throughput by direction and link replays per second.",
            [
                (
                    f"inferwatch_gpu_pcie_throughput_bytes_per_second{{{G}}}",
                    "GPU{{gpu}} {{direction}}",
                ),
                (
                    f"rate(inferwatch_gpu_pcie_replay_errors_total{{{G}}}[{RATE}])",
                    "GPU{{gpu}} replays",
                ),
            ],
            "Bps",
        )
    )
    d.with_panel(
        graph(
            "VRAM",
            "Memory used, free and total.",
            [
                (f"inferwatch_gpu_memory_used_bytes{{{G}}}", "GPU{{gpu}} used"),
                (f"inferwatch_gpu_memory_free_bytes{{{G}}}", "GPU{{gpu}} free"),
                (f"inferwatch_gpu_memory_total_bytes{{{G}}}", "GPU{{gpu}} total"),
            ],
            "bytes",
        )
    )
    d.with_panel(
        graph(
            "VRAM held by dead processes",
            "Memory of zombie, gone or orphaned processes: a restarted engine cannot get it back.",
            [(f"inferwatch_gpu_orphaned_memory_bytes{{{G}}}", "GPU{{gpu}} orphaned")],
            "bytes",
        )
    )
    d.with_panel(
        grid(
            "VRAM by process",
            "Every process holding GPU memory, and its state (running, zombie, gone, parent_gone).",
            [(f"inferwatch_gpu_process_memory_bytes{{{G}}}", "")],
            w=16,
        )
    )
    d.with_panel(
        grid(
            "GPU inventory",
            "Name, serial, VBIOS, driver and CUDA of each GPU.",
            [(f"inferwatch_gpu_info{{{G}}}", "")],
            w=24,
        )
    )
    d.with_panel(
        grid(
            "Memory errors and recovery",
            "ECC counters, remapped rows, the driver's recovery action and persistence mode.",
            [
                (f"inferwatch_gpu_ecc_errors_total{{{G}}}", ""),
                (f"inferwatch_gpu_remapped_rows{{{G}}}", ""),
                (f"inferwatch_gpu_recovery_action{{{G}}}", ""),
                (f"inferwatch_gpu_persistence_mode{{{G}}}", ""),
            ],
        )
    )
    d.with_panel(
        grid(
            "NVML health",
            "Fields this GPU does not support, NVML calls timed out, polls skipped, process "
            "series dropped over the cap.",
            [
                (f"inferwatch_gpu_field_unsupported{{{G}}}", ""),
                (f"inferwatch_gpu_nvml_call_timeouts_total{{{H}}}", ""),
                (f"inferwatch_gpu_polls_skipped_total{{{H}}}", ""),
                (f"inferwatch_gpu_process_series_dropped{{{H}}}", ""),
            ],
        )
    )


def faults_row(d: dashboard.Dashboard) -> None:
    d.with_row(dashboard.Row("Faults"))
    d.with_panel(
        grid(
            "Xid errors",
            "Xid errors from the kernel log per GPU (bus id joined to its index) and category.",
            [
                (
                    f"{XID} * on(host, pci_bus_id) group_left(gpu) inferwatch_gpu_info{{{H}}} "
                    f"or ({XID} unless on(host, pci_bus_id) inferwatch_gpu_info{{{H}}})",
                    "",
                )
            ],
        )
    )
    d.with_panel(
        grid(
            "Fault incidents, MMU faults and engine crashes",
            "Incidents (software-oob-all-ranks, hardware-memory, nvlink...), Xid 31 MMU faults "
            "by kind, engine crashes by signature, and whether an engine is crashed now (1).",
            [
                (f"inferwatch_gpu_fault_incidents_total{{{H}}}", ""),
                (f"inferwatch_gpu_mmu_faults_total{{{H}}}", ""),
                (f"inferwatch_engine_crashes_total{{{H}}}", ""),
                (f"inferwatch_engine_crashed{{{H}}}", ""),
            ],
        )
    )


def alerts_row(d: dashboard.Dashboard) -> None:
    d.with_row(dashboard.Row("Alerts"))
    d.with_panel(
        grid(
            "Alerts pending and firing",
            "inferwatch's own alert state (inferwatch_alerts, like Prometheus's ALERTS).",
            [(f"inferwatch_alerts{{{H}}}", "")],
            w=16,
        )
    )
    d.with_panel(
        graph(
            "Alerts by severity",
            "How many alerts are pending and firing.",
            [
                (
                    f"count by (severity, alertstate) (inferwatch_alerts{{{H}}})",
                    "{{alertstate}} {{severity}}",
                )
            ],
        )
    )
    d.with_panel(
        graph(
            "Alert transitions",
            "State changes of alerts per interval.",
            [
                (
                    f"increase(inferwatch_alert_transitions_total{{{H}}}[{RATE}])",
                    "{{alertname}} {{state}}",
                )
            ],
            w=12,
        )
    )
    notification_latency(d)
    d.with_panel(
        grid(
            "Active since",
            "Seconds each pending or firing alert has been active.",
            [(f"time() - inferwatch_alerts_for_state{{{H}}}", "")],
        )
    )


def notification_latency(d: dashboard.Dashboard) -> None:
    d.with_panel(
        graph(
            "Notification latency",
            "From an alert's transition to its message delivered, per receiver (99th percentile).",
            [
                (
                    "histogram_quantile(0.99, sum by (le, receiver) "
                    f"(rate(inferwatch_notification_latency_seconds_bucket{{{H}}}[{RATE}])))",
                    "{{receiver}} p99",
                )
            ],
            "s",
        )
    )


def services_row(d: dashboard.Dashboard) -> None:
    d.with_row(dashboard.Row("Services and downloads"))
    d.with_panel(
        grid(
            "Services",
            "Each configured service's state, and its restarts over the last hour.",
            [
                (f"inferwatch_service_state{{{H}}} == 1", ""),
                (f"increase(inferwatch_service_restarts_total{{{H}}}[1h])", ""),
            ],
        )
    )
    d.with_panel(
        graph(
            "Probes",
            "Whether each service's checks pass, and how long they take.",
            [
                (f"inferwatch_probe_success{{{H}}}", "{{service}} {{check}}"),
                (f"inferwatch_probe_duration_seconds{{{H}}}", "{{service}} {{check}} s"),
            ],
        )
    )
    d.with_panel(
        graph(
            "Download progress",
            "Bytes on disk against the expected size.",
            [
                (
                    f"inferwatch_download_bytes{{{H}}} / inferwatch_download_expected_bytes{{{H}}}",
                    "{{download}}",
                )
            ],
            "percentunit",
            w=6,
        )
    )
    d.with_panel(
        graph(
            "Download rate",
            "Bytes per second over 1 and 10 minutes, and the time left.",
            [
                (f"inferwatch_download_rate_bytes_per_second{{{H}}}", "{{download}} {{window}}"),
                (f"inferwatch_download_eta_seconds{{{H}}}", "{{download}} ETA s"),
            ],
            "Bps",
        )
    )
    d.with_panel(
        grid(
            "Download state and verdicts",
            "What each download is doing, its partial files and its verdicts (why a failed one "
            "failed is in DownloadFailed's annotations).",
            [
                (f"inferwatch_download_state{{{H}}} == 1", ""),
                (f"inferwatch_download_partial_files{{{H}}}", ""),
                (f"inferwatch_download_verdicts_total{{{H}}}", ""),
            ],
            w=10,
        )
    )
    d.with_panel(
        graph(
            "Host memory",
            "MemAvailable, total, page cache and swap used.",
            [
                (f"inferwatch_host_memory_available_bytes{{{H}}}", "available"),
                (f"inferwatch_host_memory_total_bytes{{{H}}}", "total"),
                (f"inferwatch_host_page_cache_bytes{{{H}}}", "page cache"),
                (f"inferwatch_host_swap_used_bytes{{{H}}}", "swap used"),
                (f"inferwatch_host_file_resident_bytes{{{H}}}", "{{path}} resident"),
            ],
            "bytes",
        )
    )
    d.with_panel(
        graph(
            "Pressure stalls",
            "Share of time tasks stalled on memory and I/O (PSI).",
            [
                (
                    f"rate(inferwatch_host_pressure_stalled_seconds_total{{{H}}}[{RATE}])",
                    "{{resource}} {{scope}}",
                )
            ],
            "percentunit",
        )
    )


def self_row(d: dashboard.Dashboard) -> None:
    d.with_row(dashboard.Row("inferwatch itself"))
    d.with_panel(
        grid(
            "Sources",
            "Each source's health (1 up) and whether it has no data to read.",
            [(f"inferwatch_source_up{{{H}}}", ""), (f"inferwatch_source_no_data{{{H}}}", "")],
        )
    )
    d.with_panel(
        graph(
            "Records read",
            "Records each source delivered per second.",
            [(f"rate(inferwatch_records_total{{{H}}}[{RATE}])", "{{source}}")],
        )
    )
    d.with_panel(
        graph(
            "Log tailers",
            "Lines and bytes read per second by the file tailers.",
            [
                (f"rate(inferwatch_tail_lines_total{{{H}}}[{RATE}])", "{{source}} lines"),
                (f"rate(inferwatch_tail_read_bytes_total{{{H}}}[{RATE}])", "{{source}} bytes"),
            ],
        )
    )
    d.with_panel(
        grid(
            "Tailer events",
            "Per followed file: its state, rotations, truncations, and bytes lost, NUL, over-long "
            "lines, errors.",
            [
                (f"inferwatch_tail_file_state{{{H}}}", ""),
                (f"inferwatch_tail_rotations_total{{{H}}}", ""),
                (f"inferwatch_tail_truncations_total{{{H}}}", ""),
                (f"inferwatch_tail_lost_bytes_total{{{H}}}", ""),
                (f"inferwatch_tail_nul_bytes_total{{{H}}}", ""),
                (f"inferwatch_tail_long_lines_total{{{H}}}", ""),
                (f"inferwatch_tail_errors_total{{{H}}}", ""),
            ],
        )
    )
    d.with_panel(
        grid(
            "Reloads, snapshot, exposure",
            "Whether the last rule and config reloads succeeded and when, the last state snapshot, "
            "and whether the HTTP port is exposed without authentication.",
            [
                (f"inferwatch_rules_last_reload_success{{{H}}}", ""),
                (f"inferwatch_rules_last_reload_success_timestamp_seconds{{{H}}}", ""),
                (f"inferwatch_config_last_reload_successful{{{H}}}", ""),
                (f"inferwatch_config_last_reload_success_timestamp_seconds{{{H}}}", ""),
                (f"inferwatch_snapshot_last_success_timestamp_seconds{{{H}}}", ""),
                (f"inferwatch_http_exposed_without_auth{{{H}}}", ""),
                (f"inferwatch_build_info{{{H}}}", ""),
            ],
        )
    )
    d.with_panel(
        graph(
            "Rule evaluation and scrapes",
            "Seconds one rule evaluation and each source's scrape take.",
            [
                (f"inferwatch_rules_evaluation_duration_seconds{{{H}}}", "rules"),
                (f"inferwatch_scrape_duration_seconds{{{H}}}", "{{source}} scrape"),
            ],
            "s",
        )
    )
    d.with_panel(
        graph(
            "Notifications and outbox",
            "Messages waiting in the outbox (on disk and in memory), and messages sent by outcome.",
            [
                (f"inferwatch_outbox_pending{{{H}}}", "outbox"),
                (f"inferwatch_outbox_memory_pending{{{H}}}", "in memory"),
                (
                    f"increase(inferwatch_notifications_total{{{H}}}[{RATE}])",
                    "{{receiver}} {{integration}} {{outcome}}",
                ),
            ],
        )
    )
    d.with_panel(
        graph(
            "Daemon memory",
            "The daemon's resident and virtual memory.",
            [
                (f"process_resident_memory_bytes{{{H}}}", "resident"),
                (f"process_virtual_memory_bytes{{{H}}}", "virtual"),
            ],
            "bytes",
        )
    )
    d.with_panel(
        graph(
            "Daemon CPU, files, series",
            "CPU seconds per second, open file descriptors against the limit, series in the store.",
            [
                (f"rate(process_cpu_seconds_total{{{H}}}[{RATE}])", "CPU s/s"),
                (f"process_open_fds{{{H}}}", "open fds"),
                (f"process_max_fds{{{H}}}", "max fds"),
                (f"inferwatch_store_series{{{H}}}", "store series"),
            ],
        )
    )
    d.with_panel(
        grid(
            "Daemon start",
            "When the daemon process started (Unix time).",
            [(f"process_start_time_seconds{{{H}}}", "")],
            w=8,
        )
    )


def host_dashboard() -> dashboard.Dashboard:
    d = (
        dashboard.Dashboard("inferwatch: host")
        .uid("inferwatch-host")
        .description(
            "One GPU host as inferwatch sees it: engine speed, GPUs, faults, alerts, "
            "services and downloads, and inferwatch's own health."
        )
        .tags(["inferwatch"])
        .refresh("30s")
        .time("now-3h", "now")
        .timezone("browser")
        .with_variable(datasource_variable())
        .with_variable(
            label_variable("host", "Host", "label_values(inferwatch_build_info, host)", multi=False)
        )
        .with_variable(
            label_variable(
                "engine",
                "Engine",
                f"label_values(inferwatch_engine_decode_anchor_tokens_per_second{{{H}}}, engine)",
                multi=True,
            )
        )
        .with_variable(
            label_variable(
                "gpu", "GPU", f"label_values(inferwatch_gpu_info{{{H}}}, gpu)", multi=True
            )
        )
        .annotation(
            xid_annotation(
                f"increase({XID}[$__interval]) > 0 or ({XID} unless {XID} offset $__interval)"
            )
        )
    )
    for row in (engine_row, gpu_row, faults_row, alerts_row, services_row, self_row):
        row(d)
    return d
