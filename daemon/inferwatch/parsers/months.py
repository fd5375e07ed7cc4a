"""Month names as log prefixes write them, in the locales a host may run (kernel, engine logs).

Kept apart from the kernel parser so that the engine-log path does not load it.
"""

from __future__ import annotations

_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "jan janv januar janeiro enero ene gen gennaio janvier sty oca янв январь января",
        "feb févr fevr fév fev februar febrero febbraio février fevereiro lut şub şubat"
        " фев февраль февраля",
        "mar mär mrz märz mars marzo março mrt mart мар март марта",
        "apr avr abr april avril abril aprile kwi nis nisan апр апрель апреля",
        "may mai maj mei mayo maggio mag май мая",
        "jun juin juni junio giugno giu cze haz haziran июн июнь июня",
        "jul juil juli julio luglio lug lip tem temmuz июл июль июля",
        "aug août aout ago agosto augustus sie ağu ağustos авг август августа",
        "sep sept set septembre september septiembre settembre setembro wrz eyl eylül"
        " сен сент сентябрь сентября",
        "oct okt out ott octobre oktober octubre ottobre outubro paź eki ekim окт октябрь октября",
        "nov novembre november noviembre novembro lis kas kasım ноя нояб ноябрь ноября",
        "dec dez déc dic dezember décembre december diciembre dicembre dezembro gru ara aralık"
        " дек декабрь декабря",
    ),
    start=1,
):
    for _name in _names.split():
        _MONTHS[_name] = _number


def month_number(name: str) -> int | None:
    """Month 1-12 for an abbreviated or full month name in common locales, else None."""
    key = name.lower().rstrip(".")
    if key in _MONTHS:
        return _MONTHS[key]
    for suffix in ("月", "월"):
        if key.endswith(suffix) and key[:-1].isdecimal():
            number = int(key[:-1])
            return number if 1 <= number <= 12 else None
    return _MONTHS.get(key[:3])
