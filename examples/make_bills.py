#!/usr/bin/env python3
"""Writes the example bills in examples/bills/: one synthetic month (May 2024) of an AutoDL
transaction log and an Alibaba Cloud BillingItemDetail export (with April before it, for the
look-back), shaped after FORMATS.md and showing the waste patterns of DOMAIN.md. Deterministic: running it again gives the same bytes.
Money is handled as integer fen (cents) so every figure is exact."""
import csv, datetime as dt, os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bills")

def yuan(fen):
    sign = "-" if fen < 0 else ""
    fen = abs(fen)
    return f"{sign}{fen // 100}.{fen % 100:02d}"

def autodl():
    rows = []  # (time, direction, type, channel, amount_fen, note)
    t0 = dt.datetime(2024, 5, 1)
    rows.append((t0.replace(hour=9, minute=2, second=11), "收入", "充值", "支付宝", 100000, "余额充值"))
    rows.append((dt.datetime(2024, 5, 15, 20, 30, 5), "收入", "充值", "微信支付", 100000, "余额充值"))
    # Instance A (RTX 4090, 2.18/h): worked 10:00-22:20 on May 1-9, then shut down for the
    # rest of the month while its paid data disk kept billing (storage while off).
    for day in range(1, 10):
        d = dt.datetime(2024, 5, day)
        for h in range(10, 22):
            rows.append((d.replace(hour=h, minute=59, second=59), "支出", "按量计费", "余额", 218, "容器实例ID：c7a1e0b3f2"))
        rows.append((d.replace(hour=22, minute=20, second=15), "支出", "按量计费", "余额", 73, "容器实例ID：c7a1e0b3f2"))
    for day in range(1, 32):
        rows.append((dt.datetime(2024, 5, day, 23, 59, 59), "支出", "数据盘", "余额", 160, "容器实例ID：c7a1e0b3f2 数据盘"))
    # Instance B (RTX 4090, 1.98/h on demand) ran around the clock from May 6: a monthly plan
    # would have been cheaper (on-demand over subscription).
    start = dt.datetime(2024, 5, 6, 0, 59, 59)
    t = start
    while t < dt.datetime(2024, 6, 1):
        rows.append((t, "支出", "按量计费", "余额", 198, "容器实例ID：9d3f55aa01"))
        t += dt.timedelta(hours=1)
    # A weekly plan bought and partly refunded.
    rows.append((dt.datetime(2024, 5, 2, 14, 5, 0), "支出", "包周", "余额", 9800, "容器实例ID：5be2c0d9a7 包周"))
    rows.append((dt.datetime(2024, 5, 4, 10, 0, 0), "收入", "退款", "余额", 4200, "容器实例ID：5be2c0d9a7 退款"))
    rows.sort(key=lambda r: r[0])
    balance = 30000
    serial = 0
    out = []
    for (t, direction, kind, channel, fen, note) in rows:
        balance += fen if direction == "收入" else -fen
        serial += 1
        out.append([f"2024050{serial:06d}", t.strftime("%Y-%m-%d %H:%M:%S"), direction, kind, channel,
                    yuan(fen), yuan(balance), note])
    out.reverse()  # the console lists the newest first
    with open(os.path.join(HERE, "autodl-2024-05.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["流水号", "交易时间", "收支类型", "交易类型", "交易渠道", "交易金额", "账户余额", "备注"])
        w.writerows(out)

ALI_HEADER = "账期,财务单元,账号ID,账号,Owner账号,产品Code,产品,产品明细Code,产品明细,消费类型,消费时间,账单开始时间,账单结束时间,服务时长,订单号/账单号,账单类型,计费方式,实例ID,实例昵称,资源组,实例标签,实例配置,实例规格,公网IP,私网IP,地域,可用区,计费项,单价,单价单位,用量,用量单位,资源包抵扣,原价,优惠金额,优惠券抵扣,应付金额,现金支付,代金券抵扣,储值卡支付金额,欠费金额".split(",")

def aliyun_april():
    """April: the instance whose snapshot outlived it ran until April 5 and was released; the
    snapshot and a data disk left behind by an earlier experiment kept billing."""
    rows = []
    acct = "1428306912345678"
    def add(day, product, pcode, detail, inst, nick, config, spec, item, price, price_unit, qty, unit, fen, hours=24):
        start = dt.datetime(2024, 4, day)
        end = start + dt.timedelta(hours=hours)
        r = dict.fromkeys(ALI_HEADER, "")
        r.update({"账期": "2024-04", "财务单元": "默认财务单元", "账号ID": acct, "账号": "gpu-lab", "Owner账号": acct,
                  "产品Code": pcode, "产品": product, "产品明细Code": pcode, "产品明细": detail, "消费类型": "后付费",
                  "消费时间": end.strftime("%Y-%m-%d %H:%M:%S"), "账单开始时间": start.strftime("%Y-%m-%d %H:%M:%S"),
                  "账单结束时间": end.strftime("%Y-%m-%d %H:%M:%S"), "服务时长": str(hours * 3600),
                  "订单号/账单号": f"2024{day:02d}04{len(rows):06d}", "账单类型": "后付账单", "计费方式": "按量付费",
                  "实例ID": inst, "实例昵称": nick, "资源组": "默认资源组", "实例配置": config, "实例规格": spec,
                  "地域": "华东1（杭州）", "可用区": "杭州 可用区I", "计费项": item, "单价": price, "单价单位": price_unit,
                  "用量": qty, "用量单位": unit, "资源包抵扣": "0", "原价": yuan(fen), "优惠金额": "0.00",
                  "优惠券抵扣": "0.00", "应付金额": yuan(fen), "现金支付": yuan(fen), "代金券抵扣": "0.00",
                  "储值卡支付金额": "0.00", "欠费金额": "0.00"})
        rows.append(r)
    old = "i-bp1old90a1x2"
    for day in range(1, 31):
        if day <= 5:
            add(day, "云服务器 ECS", "ecs", "云服务器ECS-按量付费", old, "env-build", "GPU:1*NVIDIA T4",
                "ecs.gn6i-c4g1.xlarge", "实例规格", "4.10", "元/小时", "24", "小时", 9840)
            add(day, "云服务器 ECS", "ecs", "云服务器ECS-按量付费", old, "env-build", "系统盘:ESSD云盘 PL0 40GB",
                "ecs.gn6i-c4g1.xlarge", "系统盘", "0.0125", "元/GB/天", "40", "GB", 50)
        add(day, "快照", "snapshot", "快照-按量付费", "s-bp1snap4a2c", "env-backup", f"源实例:{old}", "",
            "快照容量", "0.0040", "元/GB/天", "200", "GB", 80)
        add(day, "块存储", "ebs", "云盘-按量付费", "d-bp1orphan7h2q", "old-dataset", "ESSD云盘 PL0 300GB", "",
            "云盘容量", "0.0150", "元/GB/天", "300", "GB", 450)
    with open(os.path.join(HERE, "aliyun-2024-04.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=ALI_HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)

def aliyun():
    rows = []
    acct = "1428306912345678"
    def add(day, product, pcode, detail, sub, method, inst, nick, config, spec, ip, item, price, price_unit, qty, unit, list_fen, billed_fen, bill_type="后付账单", order=None, hours=24):
        start = dt.datetime(2024, 5, day)
        end = start + dt.timedelta(hours=hours)
        r = dict.fromkeys(ALI_HEADER, "")
        r.update({"账期": "2024-05", "财务单元": "默认财务单元", "账号ID": acct, "账号": "gpu-lab", "Owner账号": acct,
                  "产品Code": pcode, "产品": product, "产品明细Code": pcode, "产品明细": detail, "消费类型": sub,
                  "消费时间": end.strftime("%Y-%m-%d %H:%M:%S"),
                  "账单开始时间": start.strftime("%Y-%m-%d %H:%M:%S"), "账单结束时间": end.strftime("%Y-%m-%d %H:%M:%S"),
                  "服务时长": str(hours * 3600), "订单号/账单号": order or f"2024{day:02d}05{len(rows):06d}",
                  "账单类型": bill_type, "计费方式": method, "实例ID": inst, "实例昵称": nick, "资源组": "默认资源组",
                  "实例配置": config, "实例规格": spec, "公网IP": ip, "地域": "华东1（杭州）", "可用区": "杭州 可用区I",
                  "计费项": item, "单价": price, "单价单位": price_unit, "用量": qty, "用量单位": unit, "资源包抵扣": "0",
                  "原价": yuan(list_fen), "优惠金额": yuan(list_fen - billed_fen), "优惠券抵扣": "0.00",
                  "应付金额": yuan(billed_fen), "现金支付": yuan(billed_fen), "代金券抵扣": "0.00",
                  "储值卡支付金额": "0.00", "欠费金额": "0.00"})
        rows.append(r)
    gpu = "i-bp1gpua10x7k2m"
    for day in range(1, 32):
        running = day <= 12
        if running:
            # A10 instance on demand: 8.47/h list, 8.05 billed after discount
            add(day, "云服务器 ECS", "ecs", "云服务器ECS-按量付费", "后付费", "按量付费", gpu, "train-a10",
                "CPU:8核;内存:30GB;GPU:1*NVIDIA A10", "ecs.gn7i-c8g1.2xlarge", "47.96.12.34", "实例规格",
                "8.47", "元/小时", "24", "小时", 20328, 19320)
            add(day, "云服务器 ECS", "ecs", "云服务器ECS-按量付费", "后付费", "按量付费", gpu, "train-a10",
                "CPU:8核;内存:30GB;GPU:1*NVIDIA A10", "ecs.gn7i-c8g1.2xlarge", "47.96.12.34", "公网流量",
                "0.80", "元/GB", "18.5", "GB", 1480, 1480)
        # system disk, data disk and the public IP keep billing in 节省停机模式
        add(day, "云服务器 ECS", "ecs", "云服务器ECS-按量付费", "后付费", "按量付费", gpu, "train-a10",
            "系统盘:ESSD云盘 PL0 100GB", "ecs.gn7i-c8g1.2xlarge", "47.96.12.34", "系统盘",
            "0.0125", "元/GB/天", "100", "GB", 125, 125)
        add(day, "块存储", "ebs", "云盘-按量付费", "后付费", "按量付费", "d-bp1data01x9f3", "train-data",
            f"ESSD云盘 PL1 500GB;绑定实例:{gpu}", "", "", "数据盘", "0.025", "元/GB/天", "500", "GB", 1250, 1250)
        add(day, "云服务器 ECS", "ecs", "云服务器ECS-按量付费", "后付费", "按量付费", gpu, "train-a10",
            "公网带宽:5Mbps", "ecs.gn7i-c8g1.2xlarge", "47.96.12.34", "公网带宽", "0.0630", "元/小时", "24", "小时", 151, 151)
        # a snapshot of an instance released in April: stale
        add(day, "快照", "snapshot", "快照-按量付费", "后付费", "按量付费", "s-bp1snap4a2c", "env-backup",
            "源实例:i-bp1old90a1x2", "", "", "快照容量", "0.0040", "元/GB/天", "200", "GB", 80, 80)
        # a disk left behind by a released instance: unattached
        add(day, "块存储", "ebs", "云盘-按量付费", "后付费", "按量付费", "d-bp1orphan7h2q", "old-dataset",
            "ESSD云盘 PL0 300GB", "", "", "云盘容量", "0.0150", "元/GB/天", "300", "GB", 450, 450)
    # a monthly A10 instance bought on May 20 and a partial refund of an upgrade
    add(20, "云服务器 ECS", "ecs", "云服务器ECS-包年包月", "预付费", "包年包月", "i-bp1month5c8d", "infer-a10",
        "CPU:8核;内存:30GB;GPU:1*NVIDIA A10", "ecs.gn7i-c8g1.2xlarge", "", "实例规格", "", "", "1", "月",
        299000, 269100, bill_type="新购", order="215480001230001", hours=24 * 30)
    add(22, "云服务器 ECS", "ecs", "云服务器ECS-包年包月", "预付费", "包年包月", "i-bp1month5c8d", "infer-a10",
        "CPU:8核;内存:30GB;GPU:1*NVIDIA A10", "ecs.gn7i-c8g1.2xlarge", "", "实例规格", "", "", "1", "次",
        12000, 10800, bill_type="退款", order="215480001230002", hours=0)
    with open(os.path.join(HERE, "aliyun-2024-05.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=ALI_HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)

def gpushare():
    """恒源云 (gpushare) in May: an RTX 4090 at 2.38/h, dearer per hour than AutoDL's 2.18,
    that worked 10:00-22:00 on May 13-24; its 200 GB of /hy-tmp beyond the free part is
    billed only on the days it ran (0.0004/GB/h for the 12 hours), so that all in it is the
    cheaper of the two (the lesson of `gpuaudit cost --compare`)."""
    rows = []
    for day in range(13, 25):
        d = dt.datetime(2024, 5, day)
        for h in range(11, 23):
            rows.append((d.replace(hour=h), "按量", "gpu-4090-02", 238, "RTX 4090 按量计费"))
        rows.append((d.replace(hour=23, minute=59, second=59), "存储", "gpu-4090-02", 96,
                     "hy-tmp 数据盘超出部分"))
    with open(os.path.join(HERE, "gpushare-2024-05.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["扣费时间", "计费类型", "实例", "扣费金额", "备注"])
        for (t, kind, inst, fen, note) in rows:
            w.writerow([t.strftime("%Y-%m-%d %H:%M:%S"), kind, inst, yuan(fen), note])

if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    autodl()
    aliyun_april()
    aliyun()
    gpushare()
