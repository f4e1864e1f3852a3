/** The dashboard's cash-flow chart (Chart.js): in and out per month as bars, net as a line, and the totals. */
import { useEffect, useRef } from 'react';
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';
import type { paths } from '../api/schema';
import { formatAmount } from '../format';

Chart.register(
  BarController,
  BarElement,
  LineController,
  LineElement,
  PointElement,
  CategoryScale,
  LinearScale,
  Legend,
  Tooltip,
);

type Cashflow =
  paths['/api/portal/workspaces/{slug}/dashboard/cashflow']['get']['responses']['200']['content']['application/json'];

export function CashflowChart({ data }: { data: Cashflow }) {
  const money = (n: number) => formatAmount(n, data.currency);
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const chart = new Chart(canvas.current!, {
      type: 'bar',
      data: {
        labels: data.months.map((m) => m.month),
        datasets: [
          { type: 'bar', label: 'In', data: data.months.map((m) => m.inflow), backgroundColor: '#2da44e' },
          { type: 'bar', label: 'Out', data: data.months.map((m) => -m.outflow), backgroundColor: '#cf222e' },
          {
            type: 'line',
            label: 'Net',
            data: data.months.map((m) => m.net),
            borderColor: '#0969da',
            backgroundColor: '#0969da',
          },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { x: { stacked: true }, y: { stacked: false, title: { display: true, text: data.currency } } },
        plugins: {
          tooltip: { callbacks: { label: (item) => `${item.dataset.label ?? ''}: ${money(item.parsed.y ?? 0)}` } },
        },
      },
    });
    return () => chart.destroy();
  }, [data]);
  const t = data.totals;
  return (
    <>
      <div className="chart">
        <canvas
          ref={canvas}
          role="img"
          aria-label={`Cash flow per month in ${data.currency}: in ${money(t.inflow)}, out ${money(t.outflow)}, net ${money(t.net)} in total`}
          data-months={data.months.length}
          data-net={t.net}
        />
      </div>
      <p className="muted small">
        Total over {data.months.length} months: in {money(t.inflow)} · out {money(t.outflow)} · net {money(t.net)}
      </p>
    </>
  );
}
