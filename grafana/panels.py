"""Small helpers over grafana-foundation-sdk's typed builders: every panel of inferwatch's
dashboards reads Prometheus through the dashboard's ``datasource`` variable (no hard-coded UID)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common, dashboard, prometheus, stat, table, timeseries
from grafana_foundation_sdk.models.common import (
    LegendDisplayMode,
    LegendPlacement,
    TooltipDisplayMode,
)
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh, VariableSort
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
Query = tuple[str, str]  # (PromQL, legend)


def _targets(queries: list[Query], instant: bool) -> list[prometheus.Dataquery]:
    out = []
    for i, (expr, legend) in enumerate(queries):
        q = prometheus.Dataquery().expr(expr).ref_id(chr(ord("A") + i)).datasource(DATASOURCE)
        if legend:
            q = q.legend_format(legend)
        if instant:
            q = q.instant().format(PromQueryFormat.TABLE)
        out.append(q)
    return out


def graph(
    title: str, description: str, queries: list[Query], unit: str = "short", w: int = 8, h: int = 8
) -> timeseries.Panel:
    """A time series panel."""
    return (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .targets(_targets(queries, instant=False))  # type: ignore[arg-type]
        .unit(unit)
        .span(w)
        .height(h)
        .legend(
            common.VizLegendOptions()
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(common.VizTooltipOptions().mode(TooltipDisplayMode.MULTI))
    )


def grid(
    title: str, description: str, queries: list[Query], w: int = 12, h: int = 8
) -> table.Panel:
    """A table of the queries' current values (instant queries), one row per series."""
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .targets(_targets(queries, instant=True))  # type: ignore[arg-type]
        .span(w)
        .height(h)
        .show_header(True)
    )


def single(
    title: str, description: str, queries: list[Query], unit: str = "short", w: int = 4, h: int = 4
) -> stat.Panel:
    """A stat panel: the queries' last values, large."""
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .targets(_targets(queries, instant=False))  # type: ignore[arg-type]
        .unit(unit)
        .span(w)
        .height(h)
        .reduce_options(common.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
    )


def datasource_variable() -> dashboard.DatasourceVariable:
    return dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus")


def label_variable(name: str, label: str, query: str, multi: bool) -> dashboard.QueryVariable:
    """A variable listing the values of a label (``label_values(...)``), refreshed with the time
    range; ``multi`` adds All (``.*``) and multiple selection."""
    var = (
        dashboard.QueryVariable(name)
        .label(label)
        .query(query)
        .datasource(DATASOURCE)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
    )
    if multi:
        var = var.multi(True).include_all(True).all_value(".*")
    return var


def xid_annotation(expr: str) -> dashboard.AnnotationQuery:
    """Red marks on every graph where an Xid was counted."""
    return (
        dashboard.AnnotationQuery()
        .name("Xid errors")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("red")
        .expr(expr)
    )
