"""Kernel messages in, events and counter increments out: one pipeline for the daemon and replay.

The pipeline is pure and clock-free. It sees one :class:`KernelInput` at a time (its message
already parsed, once, by ``kernel_input``) and returns the effects it causes; time comes only
from the records (``KernelInput.at``), so the live daemon and ``replay`` over the same records
produce the same effects. What it knows across records:
- the multi-GPU MMU-fault correlator (``correlate``: one ``software-oob-all-ranks`` incident);
- single-GPU incidents and follow-ons (``gpu_incidents``: 45 and 154 attach, bursts group);
- repeated Xid 31 bursts per GPU (``mmu_repeats``: decided once a burst has settled);
- NVLink faults and the Xid 45 teardowns they cause, across GPUs (``nvlink``: counted per GPU at
  once, one ``nvlink`` incident once it has settled);
- fall-off twins and SXid continuation lines (``kernel_dedupe``: counted once);
- an Xid reported both as an NVML event and as a kernel line (``echoes``: counted once, the
  line preferred; an NVML-born input has ``source == NVML_SOURCE``);
- bus id → UUID from the driver's mapping lines, and the driver version from its banner;
- faults the driver logs without an Xid (``driver_faults``: GSP timeouts, init failures), with
  the driver's GPU numbers paired to bus ids only where an Xid line pairs them.

All of it is bounded: windows expire against the newest record time seen. Records may arrive
out of order by up to ``max_skew`` seconds (two kernel sources, merged replay files) without
breaking correlation; see ``correlate`` for what happens beyond that. Effects that only become
known when time moves on (a settled repeat burst or NVLink incident) are returned by a later
``process``, by ``advance(now)`` (the daemon's periodic tick) or by ``flush()`` (the end of a
replay).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.derive.kernel import metrics as m
from inferwatch.derive.kernel.correlate import DEFAULT_WINDOW, MmuCorrelator, MmuSighting
from inferwatch.derive.kernel.dedupe import FallOffTwins, SxidEvents
from inferwatch.derive.kernel.driver_faults import DriverFaults
from inferwatch.derive.kernel.echoes import XidEchoes
from inferwatch.derive.kernel.effects import KernelInput, counter, event
from inferwatch.derive.kernel.events import (
    all_ranks_event,
    driver_fault_event,
    nvlink_event,
    single_gpu_event,
    xid_event,
    xid_severity,
)
from inferwatch.derive.kernel.host_faults import GpuAerReports, GpuPcieFault, GpuProcesses
from inferwatch.derive.kernel.incidents import GpuIncidents
from inferwatch.derive.kernel.mmu_repeats import DEFAULT_HORIZON, MmuRepeatTracker, RepeatedFault
from inferwatch.derive.kernel.nvlink import (
    NVLINK_ROOT_CODES,
    NvlinkEvidence,
    NvlinkIncident,
    NvlinkIncidents,
    nvlink_root,
)
from inferwatch.event import Event
from inferwatch.parsers.kernel_misc import AerEvent, HungTask, MiscRecord, OomKill
from inferwatch.parsers.xid import GpuMapping, NvrmNote, SXidEvent, XidEvent
from inferwatch.parsers.xid_catalog import lookup

MAX_UUIDS = 1024
NVML_SOURCE = "nvml"


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """Windows in seconds. ``correlation_window`` is ``kernel.correlation_window``."""

    correlation_window: float = DEFAULT_WINDOW
    max_skew: float = 2.0
    follow_window: float = 10.0
    fall_off_window: float = 5.0
    sxid_window: float = 1.0
    repeat_horizon: float = DEFAULT_HORIZON
    nvml_hold: float = 1.0


class KernelPipeline:
    __slots__ = ("_driver_version", "_newest", "_uuids", "aer", "correlator", "driver_faults",
                 "echoes", "fall_offs", "gpu_processes", "incidents", "nvlink", "repeats",
                 "settings", "sxids")  # fmt: skip

    def __init__(self, settings: PipelineSettings | None = None) -> None:
        s = self.settings = settings or PipelineSettings()
        self.correlator = MmuCorrelator(s.correlation_window, s.max_skew)
        self.incidents = GpuIncidents(s.follow_window, s.correlation_window, s.max_skew)
        self.repeats = MmuRepeatTracker(s.correlation_window, s.max_skew, s.repeat_horizon)
        self.nvlink = NvlinkIncidents(s.follow_window, s.max_skew)
        self.fall_offs = FallOffTwins(s.fall_off_window, s.max_skew)
        self.sxids = SxidEvents(s.sxid_window, s.max_skew)
        self.echoes = XidEchoes(s.correlation_window, s.nvml_hold, s.max_skew)
        self.aer = GpuAerReports()
        self.gpu_processes = GpuProcesses()
        self.driver_faults = DriverFaults(s.follow_window)
        self._uuids: dict[str, str] = {}
        self._driver_version: str | None = None
        self._newest = float("-inf")

    @property
    def state_size(self) -> int:
        """Entries held across records (for tests asserting that state stays bounded)."""
        parts = (self.correlator, self.incidents, self.repeats, self.nvlink, self.fall_offs,
                 self.sxids, self.aer, self.gpu_processes, self.driver_faults,
                 self.echoes)  # fmt: skip
        return sum(part.state_size for part in parts) + len(self._uuids)

    def process(self, item: KernelInput) -> list[Effect]:
        """The effects of one kernel message, preceded by any that time passing has settled."""
        effects: list[Effect] = self.advance(item.at)
        record = item.record
        if isinstance(record, XidEvent):
            effects += self._xid_sighting(item, record)
        elif isinstance(record, SXidEvent):
            effects += self._sxid(item, record)
        elif isinstance(record, GpuMapping):
            effects += self._mapping(item, record)
        elif isinstance(record, NvrmNote):
            if record.driver_version:
                self._driver_version = record.driver_version
            effects += self._driver_fault(item, record)
        elif record is not None:
            effects += self._misc(item, record)
        return effects

    def advance(self, now: float) -> list[Effect]:
        """Let time reach ``now`` (never backwards): returns the effects that settles."""
        if now <= self._newest:
            return []
        self._newest = now
        effects: list[Effect] = self._released(self.echoes.release(now))
        effects += [self._repeat(r) for r in self.repeats.close(now)]
        effects += self._pcie(self.aer.close(now))
        return effects + self._nvlink_settled(self.nvlink.close(now))

    def flush(self) -> list[Effect]:
        """End of input: decide everything still waiting for time to pass."""
        effects: list[Effect] = self._released(self.echoes.release_all())
        effects += [self._repeat(r) for r in self.repeats.close_all()]
        effects += self._pcie(self.aer.close_all())
        return effects + self._nvlink_settled(self.nvlink.close_all())

    def _xid_sighting(self, item: KernelInput, xid: XidEvent) -> list[Effect]:
        """An Xid from either origin, minus the echo of one the other origin reported."""
        if xid.pci_bus_id is None:
            return self._xid(item, xid)
        key = (xid.pci_bus_id, xid.xid)
        if item.source == NVML_SOURCE:
            self.echoes.nvml(key, item)
            return []
        return self._xid(item, xid) if self.echoes.line(key, item.at) else []

    def _released(self, items: list[KernelInput]) -> list[Effect]:
        effects: list[Effect] = []
        for item in items:
            if isinstance(item.record, XidEvent):
                effects += self._xid(item, item.record)
        return effects

    def _xid(self, item: KernelInput, xid: XidEvent) -> list[Effect]:
        bus = xid.pci_bus_id
        self.gpu_processes.saw(xid.pid, xid.name)
        if xid.xid == 79 and bus is not None:
            self.aer.fall_off(bus, item.at)
        if xid.xid == 79 and self.fall_offs.twin_of(bus, item.at, xid.implied, item.key):
            return []  # the other line of the same fall-off was counted already
        info = lookup(xid.xid)
        self.driver_faults.saw_xid(xid, info.category, item.at)
        uuid = self._uuids.get(bus) if bus else None
        placement = self.incidents.place(
            item.key,
            bus,
            xid.xid,
            info.category,
            item.at,
            severity=xid_severity(xid),
            caused_by=xid.caused_by_xid,
            opens_incident=xid.xid not in NVLINK_ROOT_CODES,
        )
        incident = placement.incident
        extra: list[Effect] = []
        incident_key = incident.key if incident else None
        if placement.created and incident is not None:
            extra += [
                single_gpu_event(
                    item,
                    xid,
                    info,
                    incident,
                    shared_with=placement.shared_with,
                    uuid=uuid,
                    driver_version=self._driver_version,
                ),
                counter(
                    m.FAULT_INCIDENTS,
                    {"classification": incident.classification},
                    item.at,
                    alertable=item.alertable,
                ),
            ]
        counters = [
            counter(
                m.XID_ERRORS,
                {"pci_bus_id": bus, "xid": str(xid.xid), "category": info.category},
                item.at,
                alertable=item.alertable,
            )
        ]
        root = nvlink_root(xid.xid, xid.caused_by_xid, placement.follows_xid)
        if root is not None:
            incident_key, reached = self._nvlink(item, xid, root)
            counters += reached
        if xid.xid == 31:
            incident_key, more = self._mmu(item, xid)
            extra += more
            if xid.mmu is not None:
                mmu = xid.mmu
                labels = {
                    "pci_bus_id": bus,
                    "gpc": None if mmu.gpc is None else str(mmu.gpc),
                    "client": mmu.client,
                    "fault_type": mmu.fault_type,
                    "access_type": mmu.access_type,
                }
                counters.append(counter(m.MMU_FAULTS, labels, item.at, alertable=item.alertable))
        main = xid_event(item, xid, info, uuid=uuid, placement=placement, incident_key=incident_key)
        return [main, *counters, *extra]

    def _mmu(self, item: KernelInput, xid: XidEvent) -> tuple[str | None, list[Effect]]:
        """Feed an Xid 31 to the repeat tracker and, with detail, to the correlator."""
        bus = xid.pci_bus_id
        if bus is None:
            return None, []
        address = xid.mmu.address if xid.mmu else None
        self.repeats.observe(bus, item.at, xid.pid, address, item.alertable)
        if xid.mmu is None:
            return None, []
        sighting = MmuSighting(
            item.key, item.source, item.line, item.at, bus, xid.mmu, xid.pid, xid.name,
            item.alertable,
        )  # fmt: skip
        found = self.correlator.observe(sighting)
        if found.created is not None:
            for member in found.created.members:
                self.repeats.mark_all_ranks(member.pci_bus_id, member.at)
            incident = found.created
            return found.incident_key, [
                all_ranks_event(incident, self._driver_version),
                counter(
                    m.FAULT_INCIDENTS,
                    {"classification": "software-oob-all-ranks"},
                    incident.at,
                    alertable=incident.alertable,
                ),
            ]
        if found.incident_key is not None:
            self.repeats.mark_all_ranks(bus, item.at)
        return found.incident_key, []

    def _nvlink(self, item: KernelInput, xid: XidEvent, root: int) -> tuple[str, list[CounterInc]]:
        """Feed NVLink evidence to its incident; count the GPU the first time it is reached."""
        evidence = NvlinkEvidence(
            item.key, item.source, item.line, item.at, xid.pci_bus_id, xid.xid, root,
            xid_severity(xid), xid.pid, xid.name, xid.link, item.alertable,
        )  # fmt: skip
        placed = self.nvlink.observe(evidence)
        if not placed.new_reach:
            return placed.incident_key, []
        labels = {"pci_bus_id": xid.pci_bus_id, "root_xid": str(root)}
        return placed.incident_key, [
            counter(m.NVLINK_FAULTS, labels, item.at, alertable=item.alertable)
        ]

    def _nvlink_settled(self, incidents: list[NvlinkIncident]) -> list[Effect]:
        effects: list[Effect] = []
        for incident in incidents:
            effects += [
                nvlink_event(incident, self._driver_version),
                counter(
                    m.FAULT_INCIDENTS,
                    {"classification": "nvlink"},
                    incident.first_at,
                    alertable=incident.alertable,
                ),
            ]
        return effects

    def _sxid(self, item: KernelInput, sxid: SXidEvent) -> list[Effect]:
        headline = sxid.fatal is not None
        if not self.sxids.starts_event(sxid.pci_bus_id, sxid.sxid, item.at, headline):
            return []
        labels = {"pci_bus_id": sxid.pci_bus_id, "sxid": str(sxid.sxid)}
        return [
            event("sxid", item, sxid.to_dict(), labels),
            counter(m.SXID_ERRORS, labels, item.at, alertable=item.alertable),
        ]

    def _driver_fault(self, item: KernelInput, note: NvrmNote) -> list[Effect]:
        fault = self.driver_faults.place(note, item.at)
        if fault is None:
            return []
        effects: list[Effect] = [driver_fault_event(item, note, fault)]
        if fault.counted:
            gpu = None if fault.pci_bus_id or fault.nvrm_gpu is None else f"GPU{fault.nvrm_gpu}"
            labels = {"pci_bus_id": fault.pci_bus_id, "nvrm_gpu": gpu, "kind": fault.kind}
            effects.append(counter(m.DRIVER_FAULTS, labels, item.at, alertable=item.alertable))
        return effects

    def _mapping(self, item: KernelInput, mapping: GpuMapping) -> list[Effect]:
        self._uuids.pop(mapping.pci_bus_id, None)
        self._uuids[mapping.pci_bus_id] = mapping.uuid
        if len(self._uuids) > MAX_UUIDS:
            del self._uuids[next(iter(self._uuids))]
        return [event("gpu_mapping", item, mapping.to_dict(), {"pci_bus_id": mapping.pci_bus_id})]

    def _misc(self, item: KernelInput, record: MiscRecord) -> list[Effect]:
        alertable = item.alertable
        if isinstance(record, OomKill):
            gpu = self.gpu_processes.holds_gpu(record.pid, record.name)
            details = {**record.to_dict(), "gpu_process": gpu}
            oom = {"gpu_process": "true" if gpu else "false", "name": record.name}
            return [
                event("oom_kill", item, details, {"name": record.name}),
                counter(m.OOM_KILLS, oom, item.at, alertable=alertable),
            ]
        if isinstance(record, HungTask):
            return [
                event("hung_task", item, record.to_dict(), {"name": record.name}),
                counter(m.HUNG_TASKS, {}, item.at, alertable=alertable),
            ]
        if isinstance(record, AerEvent):
            labels: dict[str, str | None] = {
                "device": record.pci_bus_id,
                "severity": record.severity,
            }
            effects: list[Effect] = self._pcie(self.aer.observe(record, item.at, alertable))
            effects.append(event("aer", item, record.to_dict(), labels))
            if record.kind == "bus_error":
                effects.append(counter(m.AER_ERRORS, labels, item.at, alertable=alertable))
            return effects
        return []

    def _pcie(self, faults: list[GpuPcieFault]) -> list[Effect]:
        out: list[Effect] = []
        for fault in faults:
            labels = {"pci_bus_id": fault.pci_bus_id, "severity": fault.severity}
            details = {"pci_bus_id": fault.pci_bus_id, "severity": fault.severity,
                       "port": fault.port, "alertable": fault.alertable}  # fmt: skip
            key = f"gpu_pcie:{fault.pci_bus_id}:{fault.at:.6f}"
            out.append(Event("gpu_pcie_error", fault.at, "kernel", key, None,
                             {"pci_bus_id": fault.pci_bus_id}, details))  # fmt: skip
            out.append(counter(m.GPU_PCIE_FAULTS, labels, fault.at, alertable=fault.alertable))
        return out

    def _repeat(self, repeat: RepeatedFault) -> CounterInc:
        labels = {"pci_bus_id": repeat.pci_bus_id}
        return counter(m.REPEATED_MMU_FAULTS, labels, repeat.at, alertable=repeat.alertable)
