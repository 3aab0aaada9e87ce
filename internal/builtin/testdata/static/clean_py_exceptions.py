import logging

log = logging.getLogger(__name__)


def safe_int(value):
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        log.debug("not an int: %s", exc)
        return None
