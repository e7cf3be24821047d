import asyncio
from collections.abc import Awaitable


async def total(*parts: Awaitable[int], start: int = 0) -> int:
    values = await asyncio.gather(*parts)
    return start + sum(values)
