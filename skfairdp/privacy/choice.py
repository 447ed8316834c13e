"""A run that picks one of several mechanisms at random, independently of the data.

A search that draws a candidate family per run (DP-FERMI in one run, CGOO in the
next) executes, per run, one mechanism chosen by data-independent randomness, and
releases which one it ran. dp-accounting has no event for that; covering it by
the composition of every candidate's event charges each run as if it ran them
all. :class:`ChoiceDpEvent` names it, and the RDP accountant of
:mod:`skfairdp.privacy.accountant` prices it by the pointwise maximum of the
candidates' RDP curves, which is a valid bound: for the released pair
``(c, M_c(D))`` with ``c ~ p`` independent of the data,

``exp((a - 1) D_a) = sum_c p_c exp((a - 1) D_a(M_c(D) || M_c(D'))) <= max_c exp((a - 1) D_a(M_c))``

at every order ``a > 1``. Only RDP accounts it (PLD raises).
"""

from __future__ import annotations

import attr
import dp_accounting

__all__ = ["ChoiceDpEvent"]


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ChoiceDpEvent(dp_accounting.DpEvent):
    """One of ``events``, chosen independently of the data (the choice released).

    Attributes
    ----------
    events : list of DpEvent
        The candidates; the RDP curve of the choice is at most their pointwise maximum.
    """

    events: list
