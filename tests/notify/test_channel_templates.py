"""The shared channel options and a receiver's own ``title``/``message`` templates.

The common keys (``send_resolved``, ``max_alerts``, ``timeout``, ``http_config``, ``language``)
are parsed once for every channel; ``title``/``message`` are Go templates over Alertmanager's
notification data, checked when the channel is built, expanded per message, cut to the
channel's limit, and replaced by the default text plus a note when they fail while running.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from structlog.testing import capture_logs
from test_channel_wecom import OK as WECOM_OK
from test_channel_wecom import Robot, send

from inferwatch.gotemplate.templates import (
    TemplateData,
    TemplateExecError,
    compile_notification_template,
    compile_template,
    expand,
    expand_notification,
)
from inferwatch.notify.channels import bark, build, ntfy, telegram, wecom
from inferwatch.notify.channels.common import (
    ChatOptions,
    CommonOptions,
    chat_from_mapping,
    common_from_mapping,
)
from inferwatch.notify.channels.console import ConsoleNotifier
from inferwatch.notify.channels.templating import MessageTemplates, render_message, template_data
from inferwatch.notify.message import render
from inferwatch.notify.retry import OutcomeKind

FIRING: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a",
               "engine": "main"},
    "annotations": {"summary": "Engine main crashed & <restarting>"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
    "generatorURL": "http://gpu-a:9945/alerts",
    "fingerprint": "5e2b0c9a41d7f3e8",
}  # fmt: skip
RESOLVED: dict[str, Any] = {
    "status": "resolved",
    "labels": {"alertname": "GpuHot", "severity": "warning", "host": "gpu-a", "gpu": "3"},
    "annotations": {"summary": "GPU 3 at 91 C"},
    "startsAt": "2026-01-01T01:00:00Z",
    "endsAt": "2026-01-01T01:20:00Z",
    "generatorURL": "http://gpu-a:9945/alerts",
    "fingerprint": "0c9a41d7f3e85e2b",
}
PAYLOAD: dict[str, Any] = {
    "version": "4",
    "groupKey": '{}:{host="gpu-a"}',
    "truncatedAlerts": 0,
    "status": "firing",
    "receiver": "phone",
    "groupLabels": {"host": "gpu-a"},
    "commonLabels": {"host": "gpu-a"},
    "commonAnnotations": {},
    "externalURL": "http://gpu-a:9945",
    "alerts": [FIRING, RESOLVED],
}
FIRING_LIST = (
    "{{ range .Alerts.Firing }}FIRING {{ .Labels.alertname }} on {{ .Labels.host }}\n{{ end }}"
    "{{ range .Alerts.Resolved }}OK {{ .Labels.alertname }} ({{ .EndsAt }})\n{{ end }}"
)
CANARY = "TPLCANARY-5d1f0e"
MINIMAL: dict[str, dict[str, Any]] = {
    "wecom": {"key": CANARY},
    "dingtalk": {"access_token": CANARY},
    "feishu": {"token": CANARY},
    "serverchan": {"sendkey": CANARY},
    "pushplus": {"token": CANARY},
    "bark": {"device_key": CANARY},
    "ntfy": {"topic": CANARY},
    "telegram": {"bot_token": CANARY, "chat_id": 1},
    "slack": {"api_url": f"http://127.0.0.1:1/services/T/B/{CANARY}"},
    "discord": {"webhook_url": f"http://127.0.0.1:1/api/webhooks/1/{CANARY}"},
    "gotify": {"url": "http://127.0.0.1:1", "token": CANARY},
    "pushover": {"token": CANARY, "user_key": CANARY + "u"},
}


def config_of(kind: str, raw: dict[str, Any]) -> Any:
    """The parsed config of a channel built from ``raw`` (as the daemon builds it)."""
    return build(kind, raw).config  # type: ignore[attr-defined]


# -- the shared options -------------------------------------------------------------------------
def test_common_parser_reads_every_shared_key_and_http_config() -> None:
    raw = {"send_resolved": False, "max_alerts": 3,
           "http_config": {"proxy_url": "http://proxy:3128", "timeout": "5s"}}  # fmt: skip
    assert common_from_mapping(raw) == CommonOptions(
        send_resolved=False, max_alerts=3, proxy_url="http://proxy:3128", timeout=5.0
    )
    assert common_from_mapping({}) == CommonOptions()  # true, 0 (all), no proxy, 10 s
    assert common_from_mapping({"timeout": "500ms", "http_config": {"timeout": 9}}).timeout == 0.5
    assert common_from_mapping({"http_config": {"timeout": 7}}).timeout == 7.0
    with pytest.raises(ValueError, match="bad duration"):
        common_from_mapping({"timeout": "soon"})


def test_chat_parser_adds_language_and_templates() -> None:
    options = chat_from_mapping({"language": "zh", "title": "{{ .Status }}"}, "ntfy")
    assert isinstance(options, ChatOptions) and options.language == "zh"
    assert options.templates.title is not None and options.templates.message is None
    assert chat_from_mapping({}, "ntfy").templates == MessageTemplates()
    with pytest.raises(ValueError, match="ntfy: language must be en or zh"):
        chat_from_mapping({"language": "fr"}, "ntfy")
    with pytest.raises(ValueError, match="must be a string"):
        chat_from_mapping({"message": 5}, "ntfy")


@pytest.mark.parametrize("kind", sorted(MINIMAL))
def test_every_chat_channel_reads_the_shared_keys_and_templates(kind: str) -> None:
    raw = {**MINIMAL[kind], "language": "zh", "send_resolved": False, "max_alerts": 2,
           "http_config": {"proxy_url": "http://proxy:3128", "timeout": "3s"},
           "title": "T {{ .Receiver }}", "message": "M {{ len .Alerts }}"}  # fmt: skip
    config = config_of(kind, raw)
    assert (config.language, config.send_resolved, config.max_alerts) == ("zh", False, 2)
    assert (config.proxy_url, config.timeout) == ("http://proxy:3128", 3.0)
    msg = config.render_message(PAYLOAD)
    assert (msg.title, msg.body, msg.severity) == ("T phone", "M 2", "critical")


@pytest.mark.parametrize("kind", sorted(MINIMAL))
def test_a_template_that_does_not_parse_fails_the_build_naming_the_field(kind: str) -> None:
    with pytest.raises(ValueError, match=rf"{kind}: message template does not parse") as err:
        build(kind, {**MINIMAL[kind], "message": "{{ range .Alerts }}{{ .Labels.x }}"})
    assert CANARY not in str(err.value)
    with pytest.raises(ValueError, match=r"title template does not parse: .*not defined"):
        build(kind, {**MINIMAL[kind], "title": "{{ nosuchfunc . }}"})
    with pytest.raises(ValueError, match=r'undefined variable "\$labels"'):
        build(kind, {**MINIMAL[kind], "message": "{{ $labels.host }}"})  # a rule-only variable


# -- the data and the engine --------------------------------------------------------------------
def test_template_data_mirrors_alertmanager() -> None:
    data = template_data(PAYLOAD)
    assert data["Receiver"] == "phone" and data["Status"] == "firing"
    assert data["GroupLabels"] == {"host": "gpu-a"} and data["ExternalURL"] == "http://gpu-a:9945"
    first = data["Alerts"][0]
    assert first["Labels"]["alertname"] == "EngineDown" and first["StartsAt"].startswith("2026")
    assert first["GeneratorURL"] == "http://gpu-a:9945/alerts"
    assert first["Fingerprint"] == "5e2b0c9a41d7f3e8"
    assert [a["Labels"]["alertname"] for a in data["Alerts"].with_status("resolved")] == ["GpuHot"]


def test_range_alerts_firing_and_resolved() -> None:
    templates = MessageTemplates.from_mapping(
        {"title": "{{ len .Alerts.Firing }} firing, {{ len .Alerts.Resolved }} resolved",
         "message": FIRING_LIST}, "ntfy")  # fmt: skip
    msg = render_message(templates, PAYLOAD)
    assert msg.title == "1 firing, 1 resolved"
    assert msg.body == "FIRING EngineDown on gpu-a\nOK GpuHot (2026-01-01T01:20:00Z)\n"
    quiet = {**PAYLOAD, "alerts": [FIRING]}
    templates = MessageTemplates.from_mapping(
        {"message": "{{ if .Alerts.Resolved }}some{{ else }}none{{ end }} resolved; "
                    "{{ range $i, $a := .Alerts }}{{ $i }}={{ $a.Status }}{{ end }}; "
                    "{{ with index .Alerts.Firing 0 }}{{ .Annotations.summary }}{{ end }}"},
        "ntfy")  # fmt: skip
    body = render_message(templates, quiet).body
    assert body == "none resolved; 0=firing; Engine main crashed & <restarting>"


def test_the_engine_entry_points_keep_rule_templates_as_they_were() -> None:
    data = template_data(PAYLOAD)
    t = compile_notification_template("{{ .Alerts.Firing.Oops }}", "message")
    with pytest.raises(TemplateExecError, match="can't evaluate field Oops"):
        expand_notification(t, data)
    t = compile_notification_template("{{ .Alerts.Firing 1 }}", "message")
    with pytest.raises(TemplateExecError, match="wrong number of args for Firing"):
        expand_notification(t, data)
    with pytest.raises(TemplateExecError, match="query is not available"):
        expand_notification(compile_notification_template('{{ query "up" }}', "m"), data)
    assert expand_notification(compile_notification_template("{{ externalURL }}", "m"), data) == (
        "http://gpu-a:9945"
    )
    rule = compile_template("{{ $labels.gpu }} at {{ $value }}", "__alert_GpuHot")
    assert expand(rule, TemplateData({"gpu": "3"}, {}, "", 91.0)) == "3 at 91"
    with pytest.raises(TemplateExecError, match=r"__alert_X:1:115: .*can't evaluate field Foo"):
        expand(compile_template("{{ .Foo }}", "__alert_X"), TemplateData({}, {}, "", 1.0))


# -- per channel --------------------------------------------------------------------------------
def test_wecom_custom_title_and_message_against_the_robot_emulator() -> None:
    robot = Robot((200, WECOM_OK))
    out = asyncio.run(send(robot, PAYLOAD, title="{{ .CommonLabels.host }}: {{ .Status }}",
                           message=FIRING_LIST, mentioned_list=["owner"]))  # fmt: skip
    assert out.kind is OutcomeKind.OK
    content = robot.got[0][1]["markdown"]["content"]
    assert content.startswith('## <font color="warning">gpu-a: firing</font>\n')
    assert "FIRING EngineDown on gpu-a\nOK GpuHot" in content
    assert content.endswith("<@owner>")  # a critical group still rings the owner
    robot = Robot((200, WECOM_OK))
    asyncio.run(send(robot, PAYLOAD, msgtype="text", message="x{{ .Status }}"))
    assert robot.got[0][1]["text"]["content"] == "[CRITICAL] EngineDown @ gpu-a (+1)\n\nxfiring"


def test_a_long_expansion_is_cut_to_the_byte_limit_on_a_code_point() -> None:
    many = "{{ range .Alerts }}" + "故障" * 600 + "{{ end }}"
    config = config_of("wecom", {"key": CANARY, "msgtype": "text", "message": many})
    content = wecom.build_body(config, PAYLOAD)["text"]["content"]
    assert len(content.encode()) <= wecom.LIMITS["text"] and content.endswith("…")
    assert content.encode().decode("utf-8") == content and "故障故障" in content


def test_telegram_sends_the_users_html_as_written() -> None:
    config = config_of("telegram", {"bot_token": CANARY, "chat_id": 5,
                                    "title": "<i>{{ .Status }}</i> & co",
                                    "message": "{{ range .Alerts.Firing }}<code>"
                                               "{{ .Annotations.summary }}</code>{{ end }}"})  # fmt: skip
    body = telegram.build_body(config, PAYLOAD, html=True)
    assert body["parse_mode"] == "HTML"
    # As written: the user's markup and the label text it interpolates are not escaped by us.
    html = "<b><i>firing</i> & co</b>\n\n<code>Engine main crashed & <restarting></code>"
    assert body["text"] == html
    only_message = config_of("telegram", {"bot_token": CANARY, "chat_id": 5,
                                          "message": "{{ .Receiver }}"})  # fmt: skip
    text = telegram.build_body(only_message, {**PAYLOAD, "alerts": [RESOLVED],
                                              "status": "resolved"}, html=True)["text"]  # fmt: skip
    assert text == "<b>[RESOLVED] GpuHot @ gpu-a</b>\n\nphone"  # default title still escaped
    plain = telegram.build_body(config, PAYLOAD, html=False)  # the resend after a 400
    assert "parse_mode" not in plain and plain["text"].startswith("<i>firing</i> & co\n\n")


def test_ntfy_and_bark_templates_keep_priority_and_level_from_severity() -> None:
    raw = {"title": "{{ .CommonLabels.host }} needs you", "message": FIRING_LIST}
    config = config_of("ntfy", {"topic": CANARY, **raw})
    body = ntfy.build_body(config, CANARY, PAYLOAD)
    assert (body["title"], body["priority"], body["tags"]) == ("gpu-a needs you", 5,
                                                               ["rotating_light"])  # fmt: skip
    assert body["message"].startswith("FIRING EngineDown on gpu-a\n")
    config = config_of("bark", {"device_key": CANARY, **raw})
    body = bark.build_body(config, CANARY, PAYLOAD)
    assert (body["title"], body["level"]) == ("gpu-a needs you", "critical")
    assert body["body"].startswith("FIRING EngineDown") and body["id"].startswith("iw-")


def test_slack_accepts_alertmanagers_text_key() -> None:
    url = MINIMAL["slack"]["api_url"]
    config = config_of("slack", {"api_url": url, "text": "<!here> {{ .Status }}"})
    assert config.render_message(PAYLOAD).body == "<!here> firing"
    with pytest.raises(ValueError, match="only one of message and text"):
        build("slack", {"api_url": url, "text": "a", "message": "b"})


# -- defaults and failures ----------------------------------------------------------------------
def test_zh_default_rendering_is_unchanged_without_templates() -> None:
    config = config_of("ntfy", {"topic": CANARY, "language": "zh"})
    body = ntfy.build_body(config, CANARY, PAYLOAD)
    expected = render(PAYLOAD, language="zh", style="text", limit=ntfy.LIMIT)
    assert (body["title"], body["message"]) == (expected.title, expected.body)
    assert body["title"].startswith("[严重] EngineDown")
    config = config_of("wecom", {"key": CANARY, "language": "zh"})
    content = wecom.build_body(config, PAYLOAD)["markdown"]["content"]
    want = render(PAYLOAD, language="zh", style="markdown", limit=wecom.LIMITS["markdown"] - 200)
    assert content == f'## <font color="warning">{want.title}</font>\n{want.body}'


def test_a_runtime_failure_falls_back_to_the_default_text_with_a_note() -> None:
    templates = MessageTemplates.from_mapping(
        {"title": "{{ index .Alerts 9 }}", "message": "{{ .Status }}{{ index .Alerts 7 }}"},
        "ntfy")  # fmt: skip
    with capture_logs() as logs:
        msg = render_message(templates, PAYLOAD, language="en")
    default = render(PAYLOAD, language="en")
    assert msg.title == default.title and not msg.own_title and not msg.own_body
    note = "[{} template failed: default text shown]"
    assert msg.body == f"{default.body}\n\n{note.format('title')} {note.format('message')}"
    assert {e["field"] for e in logs if e["event"] == "notification template failed"} == {
        "title", "message"}  # fmt: skip
    zh = render_message(MessageTemplates.from_mapping({"message": "{{ index .Alerts 9 }}"}, "x"),
                        PAYLOAD, language="zh")  # fmt: skip
    assert zh.body.endswith("\n\n[message 模板出错：显示默认内容]")
    assert zh.title.startswith("[严重]")
    blank = MessageTemplates.from_mapping({"message": "{{ range .Alerts.Resolved }}{{ end }}"}, "x")
    firing_only = {**PAYLOAD, "alerts": [FIRING]}
    assert render_message(blank, firing_only).body.startswith("[CRITICAL] EngineDown")


def test_a_failing_template_still_delivers_through_the_channel() -> None:
    robot = Robot((200, WECOM_OK))
    out = asyncio.run(send(robot, PAYLOAD, message='{{ query "up" }}'))  # no query engine here
    assert out.kind is OutcomeKind.OK
    content = robot.got[0][1]["markdown"]["content"]
    assert "Engine main crashed" in content and "message template failed" in content


def test_console_logs_one_record_with_the_expanded_text() -> None:
    console = ConsoleNotifier({"title": "{{ .Receiver }}", "message": FIRING_LIST})
    with capture_logs() as logs:
        out = asyncio.run(console.notify(PAYLOAD))
    assert out.kind is OutcomeKind.OK
    records = [e for e in logs if e["event"] == "notification"]
    assert len(records) == 1 and records[0]["title"] == "phone"
    assert records[0]["message"].startswith("FIRING EngineDown")
    with pytest.raises(ValueError, match="console: message template does not parse"):
        ConsoleNotifier({"message": "{{ end }}"})
