// Adapted from the project's shared reference material, shared/bench/fanin_ns3.cc
// (the fan-in-N workload as an ns-3 3.44 C++ program). Changes for bench/run.py: the output line
// also carries the keys of the cnsim `fanin` example's contract (events_per_s, max_rss_kb,
// delivered_gbps, wall_s), and pkts_per_wall_s / events_per_s are per second of Simulator::Run()
// (the event loop), not of setup + run. Built by bench/setup_ns3.sh.
//
// fan-in-N reference workload as an ns-3 C++ program, built against the headers and shared
// libraries shipped inside the PyPI wheel `ns3==3.44.post0` (no ns-3 source build needed).
// Same scenario and parameters as fanin_ns3.py; see build_ns3_cc.sh for the compile line.
//
// Usage: fanin_ns3 --n=4 --rateGbps=5 --ms=100 [--seed=1] [--buf=150000]
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sys/resource.h>

using namespace ns3;

int
main(int argc, char* argv[])
{
    auto t0 = std::chrono::steady_clock::now();
    uint32_t n = 4;
    double rateGbps = 5.0;
    double ms = 100.0;
    uint32_t seed = 1;
    uint32_t buf = 150000;
    CommandLine cmd;
    cmd.AddValue("n", "number of senders", n);
    cmd.AddValue("rateGbps", "per-sender rate, Gb/s", rateGbps);
    cmd.AddValue("ms", "simulated time, ms", ms);
    cmd.AddValue("seed", "RNG seed", seed);
    cmd.AddValue("buf", "switch egress buffer, bytes", buf);
    cmd.Parse(argc, argv);

    const uint32_t WIRE = 1500;
    const uint32_t PAYLOAD = WIRE - 2 - 20 - 8; // PPP + IPv4 + UDP
    RngSeedManager::SetSeed(seed);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    double endS = ms / 1000.0;
    int64_t intervalNs = llround(WIRE * 8 / (rateGbps * 1e9) * 1e9);

    NodeContainer senders;
    senders.Create(n);
    NodeContainer sw;
    sw.Create(1);
    NodeContainer rx;
    rx.Create(1);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    p2p.SetChannelAttribute("Delay", StringValue("500ns"));
    p2p.DisableFlowControl(); // no qdisc; the device DropTailQueue is the only queue

    InternetStackHelper stack;
    stack.Install(senders);
    stack.Install(sw);
    stack.Install(rx);

    Ipv4AddressHelper addr;
    for (uint32_t i = 0; i < n; i++)
    {
        NetDeviceContainer devs = p2p.Install(senders.Get(i), sw.Get(0));
        char base[32];
        snprintf(base, sizeof(base), "10.%u.%u.0", 1 + i / 250, i % 250);
        addr.SetBase(Ipv4Address(base), Ipv4Mask("255.255.255.0"));
        addr.Assign(devs);
    }
    p2p.SetQueue("ns3::DropTailQueue<Packet>",
                 "MaxSize",
                 QueueSizeValue(QueueSize(std::to_string(buf) + "B")));
    NetDeviceContainer bdevs = p2p.Install(sw.Get(0), rx.Get(0));
    addr.SetBase(Ipv4Address("192.168.0.0"), Ipv4Mask("255.255.255.0"));
    Ipv4InterfaceContainer bif = addr.Assign(bdevs);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    uint16_t port = 9;
    UdpServerHelper serverHelper(port);
    ApplicationContainer sapps = serverHelper.Install(rx.Get(0));
    sapps.Start(Seconds(0.0));
    sapps.Stop(Seconds(endS + 1.0));
    Ptr<UdpServer> server = DynamicCast<UdpServer>(sapps.Get(0));

    std::vector<Ptr<UdpClient>> clients;
    for (uint32_t i = 0; i < n; i++)
    {
        UdpClientHelper ch(bif.GetAddress(1), port);
        ch.SetAttribute("MaxPackets", UintegerValue(4294967295u));
        ch.SetAttribute("Interval", TimeValue(NanoSeconds(intervalNs)));
        ch.SetAttribute("PacketSize", UintegerValue(PAYLOAD));
        ApplicationContainer capps = ch.Install(senders.Get(i));
        capps.Start(NanoSeconds((int64_t)(u01(rng) * intervalNs)));
        capps.Stop(Seconds(endS));
        clients.push_back(DynamicCast<UdpClient>(capps.Get(0)));
    }
    Ptr<Queue<Packet>> bq = DynamicCast<PointToPointNetDevice>(bdevs.Get(0))->GetQueue();

    auto t1 = std::chrono::steady_clock::now();
    Simulator::Stop(Seconds(endS));
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();

    uint64_t delivered = server->GetReceived();
    uint64_t dropped = bq->GetTotalDroppedPackets();
    uint64_t sent = 0;
    for (auto& c : clients)
    {
        sent += c->GetTotalTx() / PAYLOAD;
    }
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double setup = std::chrono::duration<double>(t1 - t0).count();
    double run = std::chrono::duration<double>(t2 - t1).count();
    double wall = std::chrono::duration<double>(t2 - t0).count();
    uint64_t pkts = delivered + dropped;
    double gbps = delivered * WIRE * 8.0 / endS / 1e9;
    printf("sim=ns3-3.44-cpp n=%u rate_gbps=%.3f sim_ms=%.1f sent=%lu delivered=%lu dropped=%lu "
           "in_flight=%ld delivered_gbps=%.4f events=%lu setup_s=%.4f run_s=%.4f wall_s=%.4f "
           "pkts_per_wall_s=%.0f events_per_s=%.0f slowdown=%.2f max_rss_kb=%ld\n",
           n, rateGbps, ms, (unsigned long)sent, (unsigned long)delivered, (unsigned long)dropped,
           (long)(sent - delivered - dropped), gbps, (unsigned long)events, setup, run, wall,
           pkts / run, events / run, wall / endS, ru.ru_maxrss);
    return 0;
}
